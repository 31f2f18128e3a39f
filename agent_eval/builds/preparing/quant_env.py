"""Running a quantization job in `.venv-quant` (llmcompressor's pins clash with vLLM's), as a subprocess of
`builds prepare`: `_quantize_script.py` takes the jobs as JSON and prints progress lines.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.builds.serving import host
from agent_eval.errors import BuildError


def run_quant_tools(jobs: list[dict[str, Any]], say: Callable[[str], None]) -> None:
    python = host.quant_python()
    if not python.exists():
        raise BuildError(
            f"the quantization environment is missing ({python}); run scripts/setup.sh to create it"
        )
    script = Path(__file__).with_name("_quantize_script.py")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
        "TOKENIZERS_PARALLELISM": "0",
    }
    proc = subprocess.Popen(
        [str(python), str(script), json.dumps(jobs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    tail: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            line = line.rstrip()
            if line.startswith("["):
                say("  " + line)
            tail = [*tail[-29:], line]
        code = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if code != 0:
        names = ", ".join(j["name"] for j in jobs)
        raise BuildError(f"preparing {names} failed (exit {code}); last output:\n" + "\n".join(tail[-15:]))
