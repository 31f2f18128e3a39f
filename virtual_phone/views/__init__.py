"""The view tree of what is on screen and what reads it: touch hit-testing, the rendered pixels (and their
PNG), and uiautomator's XML, so all three agree on every bound."""
