"""silver"""
