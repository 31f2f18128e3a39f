"""The commands Android automation libraries send at connect and during episodes, answered in Android 14's
shapes (the part a parser reads: field names, their order, the exit code), through the real adb binary and
through adbutils. Each literal's source in AOSP is listed in docs/virtual_phone.md."""

from __future__ import annotations

import re

from _phones import adb, device, one_phone

BASE = 5670
fleet, serial = one_phone(BASE)


def run(serial: str, command: str) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of a command that changes the phone, from the real `adb shell`."""
    p = adb(serial, "shell", command)
    return p.stdout.decode(), p.stderr.decode(), p.returncode


def ask(serial: str, command: str) -> tuple[str, str, int]:
    """The same for a query; adbutils' shell v2 must see exactly what the adb binary saw."""
    answer = run(serial, command)
    via_lib = device(serial).shell2(command, v2=True)
    assert (via_lib.stdout, via_lib.stderr, via_lib.returncode) == answer, command
    return answer


def test_am_stack_list_has_one_line_per_task_with_stable_ids(serial: str) -> None:
    run(serial, "am start -n com.android.settings/.Settings")
    out, _, rc = ask(serial, "am stack list")
    task_line = re.compile(
        r"^  taskId=(\d+): (\S+/\S+) bounds=\[0,0\]\[1080,2400\] userId=0 visible=(true|false) "
        r"topActivity=ComponentInfo\{(\S+)\}$"
    )
    tasks = [m.groups() for m in map(task_line.match, out.splitlines()) if m]
    assert rc == 0 and len(tasks) == 2  # Settings on top, the launcher below
    settings_id, base, visible, top = tasks[0]
    assert base == "com.android.settings/com.android.settings.Settings"  # the alias it was started by
    assert top == "com.android.settings/com.android.settings.homepage.SettingsHomepageActivity"
    assert visible == "true" and tasks[1][2] == "false"
    assert re.search(
        rf"^RootTask id={settings_id} bounds=\[0,0\]\[1080,2400\] displayId=0 userId=0$", out, re.M
    )
    # The same task keeps its id; a grep as drivers do it finds the visible one.
    run(serial, "input keyevent KEYCODE_HOME")
    run(serial, "am start -a android.settings.WIFI_SETTINGS")
    visible_line, _, _ = ask(serial, "am stack list | grep -E visible=true")
    assert visible_line.startswith(f"  taskId={settings_id}: ")
    assert "topActivity=ComponentInfo{com.android.settings/com.android.settings.Settings$NetworkProvider" in (
        visible_line
    )


def test_am_task_lock_pins_the_task(serial: str) -> None:
    run(serial, "am start -n com.android.settings/.Settings")
    task = re.search(r"taskId=(\d+): com\.android\.settings/", ask(serial, "am stack list")[0])
    assert task is not None
    assert run(serial, f"am task lock {task.group(1)}") == ("Activity manager is in lockTaskMode\n", "", 0)
    run(serial, "input keyevent KEYCODE_HOME")
    assert device(serial).app_current().package == "com.android.settings"
    assert run(serial, "am task lock stop")[0] == "Activity manager is not in lockTaskMode\n"
    run(serial, "input keyevent KEYCODE_HOME")
    assert device(serial).app_current().package == "com.google.android.apps.nexuslauncher"
    _out, err, rc = run(serial, "am task lock x")
    assert rc == 255 and err.startswith("Exception occurred while executing 'task':\n")


def test_am_start_reports_the_alias_target_and_stops_with_S(serial: str) -> None:
    out, _, rc = run(serial, "am start -W -n com.android.settings/.Settings")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "Starting: Intent { cmp=com.android.settings/.Settings }"
    assert [line.split(":")[0] for line in lines[1:]] == [
        "Status",
        "LaunchState",
        "Activity",
        "TotalTime",
        "WaitTime",
        "Complete",
    ]
    assert "Activity: com.android.settings/.homepage.SettingsHomepageActivity" in lines
    window = ask(serial, "dumpsys window | grep mCurrentFocus")[0]
    assert window.strip().endswith(
        "u0 com.android.settings/com.android.settings.homepage.SettingsHomepageActivity}"
    )
    out, _, _ = run(serial, "am start -S -W -n com.android.settings/.Settings")
    assert out.splitlines()[:2] == [
        "Stopping: com.android.settings",
        "Starting: Intent { cmp=com.android.settings/.Settings }",
    ]
    assert "LaunchState: COLD" in out


def test_am_broadcast_prints_the_component(serial: str) -> None:
    out, _, rc = run(serial, "am broadcast -a com.example.PING -n com.android.shell/.BugreportReceiver")
    assert rc == 0 and out == (
        "Broadcasting: Intent { act=com.example.PING flg=0x400000"
        " cmp=com.android.shell/.BugreportReceiver }\n"
        "Broadcast completed: result=0\n"
    )


def test_dumpsys_input_has_a_section_per_device_with_its_orientation(serial: str) -> None:
    out, _, rc = ask(serial, "dumpsys input")
    assert rc == 0 and out.startswith("INPUT MANAGER (dumpsys input)\n")
    n = re.search(r"Input Reader State \(Nums of device: (\d+)\):", out)
    assert n is not None and len(re.findall(r"^  Device \d+: \S+$", out, re.M)) == int(n.group(1))
    assert re.search(r"^      InputDeviceOrientation: Rotation0$", out, re.M)


def test_dumpsys_activity_of_a_package_shows_task_activity_and_views(serial: str) -> None:
    run(serial, "am start -n com.android.settings/.Settings")
    run(serial, "am start -a android.settings.WIFI_SETTINGS")
    out, _, rc = ask(serial, "dumpsys activity com.android.settings com.android.settings")
    lines = out.splitlines()
    assert rc == 0 and re.fullmatch(r"TASK com\.android\.settings id=\d+ userId=0", lines[0])
    activities = [line for line in lines if line.startswith("  ACTIVITY ")]
    assert [a.split()[1] for a in activities] == [
        "com.android.settings/.homepage.SettingsHomepageActivity",
        "com.android.settings/.Settings$NetworkProviderSettingsActivity",
    ]
    assert all(re.fullmatch(r"  ACTIVITY \S+ [0-9a-f]{7} pid=\d+", a) for a in activities)
    views = out[out.rindex("    View Hierarchy:\n") :].splitlines()
    assert views[1].startswith("      DecorView@") and views[1].endswith(
        "[Settings$NetworkProviderSettingsActivity]"
    )
    assert any(
        "androidx.recyclerview.widget.RecyclerView{" in v and "app:id/recycler_view}" in v for v in views
    )
    # adbutils' own parser of `dumpsys activity top` still works.
    assert device(serial).app_current().activity.endswith(".Settings$NetworkProviderSettingsActivity")


def test_dumpsys_options_and_service_list(serial: str) -> None:
    listing, _, rc = ask(serial, "dumpsys -l")
    assert rc == 0 and listing.startswith("Currently running services:\n")
    assert {"  input", "  window", "  activity", "  package"} <= set(listing.splitlines())
    out, _, rc = ask(serial, "dumpsys -t 10 window")
    assert rc == 0 and "mCurrentFocus=Window{" in out
    out, err, rc = ask(serial, "dumpsys no_such_service")
    assert (out, err, rc) == ("", "Can't find service: no_such_service\n", 0)


def test_pm_features_permissions_paths_and_packages(serial: str) -> None:
    features, _, rc = ask(serial, "pm list features")
    assert rc == 0 and all(line.startswith("feature:") for line in features.splitlines())
    assert "feature:android.hardware.touchscreen" in features.splitlines()
    perm = "android.permission.CAMERA"
    assert run(serial, f"pm grant com.android.camera2 {perm}") == ("", "", 0)
    assert f"{perm}: granted=true" in ask(serial, "pm dump com.android.camera2")[0]
    assert run(serial, f"pm revoke com.android.camera2 {perm}") == ("", "", 0)
    assert f"{perm}: granted=true" not in ask(serial, "pm dump com.android.camera2")[0]
    _, err, rc = run(serial, f"pm grant com.no.such {perm}")
    assert rc == 255 and err == (
        "Exception occurred while executing 'grant':\n"
        "java.lang.IllegalArgumentException: Unknown package: com.no.such\n"
    )
    packages = ask(serial, "pm list packages")[0].splitlines()
    assert len(packages) >= 190 and all(p.startswith("package:") for p in packages)
    for wanted in (
        "com.google.android.permissioncontroller",
        "com.android.systemui",
        "com.google.android.webview",
    ):
        assert f"package:{wanted}" in packages
    assert ask(serial, "pm path com.android.systemui")[0] == (
        "package:/system_ext/priv-app/SystemUIGoogle/SystemUIGoogle.apk\n"
    )
    assert ask(serial, "pm path com.no.such") == ("", "", 1)
    dump = ask(serial, "pm dump com.android.settings")[0]
    assert re.search(r"^  Package \[com\.android\.settings\] \([0-9a-f]+\):$", dump, re.M)
    assert "    codePath=/system_ext/priv-app/Settings\n" in dump


def test_settings_reset_untrusted_defaults_and_the_system_table(serial: str) -> None:
    run(serial, "settings put secure location_mode 0")
    run(serial, "settings put secure my_untrusted_key 5")
    assert run(serial, "settings reset secure untrusted_defaults") == ("", "", 0)
    assert ask(serial, "settings get secure location_mode")[0] == "3\n"
    assert ask(serial, "settings get secure my_untrusted_key")[0] == "null\n"
    assert run(serial, "settings reset system untrusted_defaults") == (
        "",
        "Invalid table; no reset performed\n",
        0,
    )


def test_getprop_keys_drivers_read_at_connect(serial: str) -> None:
    d = device(serial)
    assert d.prop.model == "sdk_gphone64_x86_64" and d.prop.name == "sdk_gphone64_x86_64"
    assert d.prop.device == "emu64x"
    expected = {
        "ro.build.version.sdk": "34",
        "ro.build.version.release": "14",
        "ro.product.manufacturer": "Google",
        "ro.product.brand": "google",
        "sys.boot_completed": "1",
        "ro.kernel.qemu": "1",
        "ro.build.type": "userdebug",
    }
    for key, value in expected.items():
        assert ask(serial, f"getprop {key}") == (value + "\n", "", 0)
    listing = ask(serial, "getprop")[0]
    assert re.search(r"^\[ro\.build\.fingerprint\]: \[google/sdk_gphone64_x86_64/emu64x:14/", listing, re.M)
