"""What a screen is to the harness: numbered elements and an observation (`observation`), parsed from a
uiautomator dump (`uitree`). Pure data and parsing, below the device, the agent, the task and the report.
"""
