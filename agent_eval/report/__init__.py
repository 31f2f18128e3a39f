"""Reports of a run: terminal tables, scorecard.json and .md, the HTML page; from scoring output only.

Import from the submodules (markdown, terminal, cli, html): importing this package loads nothing heavy.
"""
