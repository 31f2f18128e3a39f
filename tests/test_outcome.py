from agent_eval.records import Outcome, classify


def test_wifi_on_then_off_again_is_undone() -> None:
    assert classify([False, False, True, False], "done") is Outcome.UNDONE


def test_reached_and_said_done_while_held_is_success() -> None:
    assert classify([False, False, True], "done") is Outcome.SUCCESS


def test_reached_but_never_said_done_is_no_stop() -> None:
    assert classify([False, True, True, True], None) is Outcome.NO_STOP


def test_infeasible_is_never_credited_as_completion() -> None:
    assert classify([False, True], "infeasible") is Outcome.NO_STOP


def test_done_without_reaching_is_premature() -> None:
    assert classify([False], "done") is Outcome.PREMATURE_DONE
    assert classify([False, False], "infeasible") is Outcome.PREMATURE_DONE


def test_never_reached_never_said_is_nav_fail() -> None:
    assert classify([False, False, False], None) is Outcome.NAV_FAIL


def test_verify_task_held_from_start_and_done_is_success() -> None:
    assert classify([True], "done") is Outcome.SUCCESS
    assert classify([True, False], "done") is Outcome.UNDONE
