"""Screens bound to an app's records: where the records come from (record sources), how their list, detail,
edit and dialog windows are laid out, what touching and typing on them does, and the apps' behaviours."""
