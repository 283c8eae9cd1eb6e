"""contracts"""
