"""What an app's YAML (apps/*.yaml) may say: apps, screens and rows, screens bound to records, and the
`data:` section. Checked on load; the bottom of the phone's layers."""
