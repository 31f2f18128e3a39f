"""Preparing builds: `builds prepare` and the built-in recipe kinds that make a build's weights (quantized,
rounded, converted, merged), with the scripts run in `.venv-quant`. Imports the interface and serving.
"""
