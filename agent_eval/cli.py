"""The `agent-eval` command: a thin layer that wires each part's commands together.

The commands live in agent_eval/commands/; `device` is the `virtual-phone` command of the phone's own package
under its old name. This file registers them and turns project errors into messages.
"""

from __future__ import annotations

import sys

import click

from agent_eval import __version__
from agent_eval.errors import AgentEvalError
from virtual_phone.errors import VirtualPhoneError


@click.group()
@click.version_option(__version__, prog_name="agent-eval")
def cli() -> None:
    """Evaluate Android GUI agents on quantized builds: how often they get there, and notice it."""
    from agent_eval.plugins import load_plugins

    load_plugins()  # installed plug-in packages register their kinds once, before any command reads them


def _register() -> None:
    # Each part owns its commands; importing them here keeps `agent_eval.cli` free of import cycles.
    from agent_eval.commands.builds import builds_group
    from agent_eval.commands.fidelity import fidelity_command, fidelity_power_command
    from agent_eval.commands.report import compare_command, report_command, view_command
    from agent_eval.commands.run import run_command
    from agent_eval.commands.tune import tune_group
    from agent_eval.commands.validate import validate_command
    from virtual_phone.cli import phones

    for command in (
        run_command,
        validate_command,
        report_command,
        view_command,
        compare_command,
        builds_group,
        fidelity_command,
        fidelity_power_command,
    ):
        cli.add_command(command)
    cli.add_command(tune_group)
    cli.add_command(phones, name="device")  # `agent-eval device start` = `virtual-phone start`


_register()


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:  # click turns Ctrl-C into Abort (we ask no questions: that is all it is)
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (AgentEvalError, VirtualPhoneError) as e:
        click.echo(f"agent-eval: error: {e}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
