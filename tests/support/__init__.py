"""Helpers shared by every test folder: assertions, the op table and its rows, child interpreters, shared Functions."""
