"""The apps' own modules: what an app does that its YAML cannot say (record sources, actions, save rules,
display formats).

Importing this package imports every module in its folder, so each registers itself: a new app's module is
a new file here and nothing else.
"""

import importlib
import pkgutil

__all__ = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))

for _name in __all__:
    importlib.import_module(f"{__name__}.{_name}")
