"""The screens a phone lays out as a view tree: the launcher, Settings' rows, search and dialogs, the quick
settings shade and the keyboard, and the screens of app records from records/ under them."""
