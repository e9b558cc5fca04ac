"""Bringing run folders of older factory versions up to date (`factory store convert`)."""
