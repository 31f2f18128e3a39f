"""The apps' own modules: what an app does that its YAML cannot say (record sources, actions, save rules).

Importing this package registers every one of them.
"""

from virtual_phone.app_modules import calendar, contacts, files, markor, messages

__all__ = ["calendar", "contacts", "files", "markor", "messages"]
