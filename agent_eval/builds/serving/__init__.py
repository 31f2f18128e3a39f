"""Serving builds: the built-in engine kinds, starting a build's server and reaching it, its weights checked
against what was prepared, what this host offers the engines. Imports the interface above, never preparing.
"""
