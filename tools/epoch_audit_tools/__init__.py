"""epoch_audit_tools"""
