"""epoch_audit"""
