"""`python tests/_scripted_server.py PORT MODEL`: the scripted endpoint as a server process of its own.

It plays the Wi-Fi path until killed; the engine kind in test_extending.py starts it as vLLM is started.
"""

from __future__ import annotations

import sys
import threading

from scripted_endpoint import DONE, ScriptedEndpoint, tap

WIFI_ON = [tap("Settings"), tap("Network & internet"), tap("Internet"), tap("Wi-Fi"), DONE]

if __name__ == "__main__":
    port, model = int(sys.argv[1]), sys.argv[2]
    with ScriptedEndpoint(WIFI_ON, model=model, port=port):
        threading.Event().wait()
