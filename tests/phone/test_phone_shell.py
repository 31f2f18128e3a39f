"""The virtual phone's shell and Android commands, through `adb shell` as a user types them: shell syntax,
settings, am/monkey/pm, dumpsys, wm, getprop, and the answers Android gives to bad input."""

from __future__ import annotations

import pytest
from _phones import adb, device, one_phone, sh

BASE = 5620
SERIAL = f"emulator-{BASE}"

fleet, serial = one_phone(BASE)


@pytest.mark.parametrize(
    ("command", "stdout", "rc"),
    [
        ("echo a; echo b", "a\nb\n", 0),
        ("false && echo no || echo yes", "yes\n", 0),
        ("true && echo yes", "yes\n", 0),
        ("false; echo $?", "1\n", 0),
        ("foo 2>/dev/null; echo $?", "127\n", 0),
        ("echo 'a  b' \"c $? d\"", "a  b c 0 d\n", 0),
        ("echo one two | grep -o two", "two\n", 0),
        ("nosuchcmd 2>&1 | grep -c inaccessible", "1\n", 0),
        ("printf '%s=%d\\n' a 1 b 2", "a=1\nb=2\n", 0),
        ("echo hello | grep -q bye", "", 1),
        ("echo x > /sdcard/f.txt && echo y >> /sdcard/f.txt && cat /sdcard/f.txt", "x\ny\n", 0),
        ("cat /sdcard/missing.txt 2>&1", "cat: /sdcard/missing.txt: No such file or directory\n", 1),
        ("echo -n abc | wc -c", "3\n", 0),
        ("getprop ro.build.version.sdk; getprop no.such.prop; getprop sys.boot_completed", "34\n\n1\n", 0),
        ("settings get global no_such_key", "null\n", 0),
        ("input tap 1 1; echo $?", "0\n", 0),
        ("exit 7", "", 7),
        ("echo 'unterminated", "", 1),
        ("echo a | | cat", "", 1),
    ],
)
def test_shell_syntax_and_exit_codes(serial: str, command: str, stdout: str, rc: int) -> None:
    done = adb(serial, "shell", command)
    assert done.stdout.decode() == stdout
    assert done.returncode == rc


def test_settings_get_put_list_delete(serial: str) -> None:
    assert sh(serial, "settings put global zen_mode 1") == ""
    assert sh(serial, "settings get global zen_mode") == "1\n"
    assert "wifi_on=1\n" in sh(serial, "settings list global")
    assert sh(serial, "settings put secure my_key hello; settings get secure my_key") == "hello\n"
    assert sh(serial, "settings delete secure my_key") == "Deleted 1 rows\n"
    assert sh(serial, "settings get secure my_key") == "null\n"
    bad = adb(serial, "shell", "settings get bogus wifi_on")
    assert bad.returncode == 255
    assert b"Invalid namespace 'bogus'" in bad.stderr


def test_svc_and_cmd_change_the_same_keys(serial: str) -> None:
    sh(serial, "svc wifi disable; svc bluetooth enable; svc data disable")
    assert sh(
        serial,
        "settings get global wifi_on; settings get global bluetooth_on; settings get global mobile_data",
    ) == ("0\n1\n0\n")
    assert sh(serial, "cmd wifi status").startswith("Wifi is disabled\n")
    sh(serial, "cmd wifi set-wifi-enabled enabled")
    assert sh(serial, "cmd wifi status").startswith("Wifi is enabled\n")
    assert sh(serial, "cmd uimode night yes") == "Night mode: yes\n"
    assert sh(serial, "settings get secure ui_night_mode") == "2\n"


def test_am_start_component_and_action(serial: str) -> None:
    out = sh(serial, "am start -n com.android.settings/.Settings")
    assert out == "Starting: Intent { cmp=com.android.settings/.Settings }\n"
    assert "mCurrentFocus=Window{" in sh(serial, "dumpsys window | grep mCurrentFocus")
    assert "com.android.settings/com.android.settings.homepage.SettingsHomepageActivity}" in sh(
        serial, "dumpsys window | grep mCurrentFocus"
    )
    assert sh(serial, "am start -a android.settings.WIFI_SETTINGS") == (
        "Starting: Intent { act=android.settings.WIFI_SETTINGS }\n"
    )
    top = sh(serial, "dumpsys activity activities | grep ResumedActivity")
    assert "topResumedActivity=ActivityRecord{" in top
    assert "com.android.settings/.Settings$NetworkProviderSettingsActivity t" in top
    assert "ACTIVITY com.android.settings/.Settings$NetworkProviderSettingsActivity " in sh(
        serial, "dumpsys activity top"
    )
    app = device(serial).app_current()
    assert (app.package, app.activity) == (
        "com.android.settings",
        "com.android.settings.Settings$NetworkProviderSettingsActivity",
    )


def test_malformed_and_unknown_intents(serial: str) -> None:
    missing = adb(serial, "shell", "am start -n com.foo/.Bar")
    assert missing.stdout == b"Starting: Intent { cmp=com.foo/.Bar }\n"
    assert missing.stderr == b"Error type 3\nError: Activity class {com.foo/com.foo.Bar} does not exist.\n"
    bad = adb(serial, "shell", "am start -n nonsense")
    assert bad.returncode == 255
    assert b"java.lang.IllegalArgumentException: Bad component name: nonsense" in bad.stderr
    unresolved = adb(serial, "shell", "am start -a android.settings.NO_SUCH_SETTINGS")
    assert (
        b"Error: Activity not started, unable to resolve Intent { act=android.settings.NO_SUCH_SETTINGS"
        in (unresolved.stderr)
    )
    option = adb(serial, "shell", "am start --bogus")
    assert option.returncode == 255
    assert b"Unknown option: --bogus" in option.stderr
    # None of these moved the phone off the home screen.
    assert "NexusLauncherActivity" in sh(serial, "dumpsys window | grep mCurrentFocus")


def test_monkey_force_stop_and_packages(serial: str) -> None:
    out = adb(serial, "shell", "monkey -p com.android.settings 1")
    assert out.returncode == 0 and b"Events injected: 1" in out.stdout
    assert "com.android.settings/" in sh(serial, "dumpsys window | grep mCurrentFocus")
    sh(serial, "am force-stop com.android.settings")
    assert "NexusLauncherActivity" in sh(serial, "dumpsys window | grep mCurrentFocus")
    assert adb(serial, "shell", "monkey -p com.no.such 1").returncode == 252
    pkgs = sh(serial, "pm list packages").splitlines()
    assert "package:com.android.settings" in pkgs
    assert sh(serial, "pm list packages settings").splitlines() == [
        "package:com.android.providers.settings",
        "package:com.android.providers.settings.auto_generated_rro_product__",
        "package:com.android.settings",
        "package:com.google.android.settings.intelligence",
    ]


def test_display_queries_used_by_clients(serial: str) -> None:
    assert sh(serial, "wm density") == "Physical density: 420\n"
    assert "orientation=0" in sh(serial, "dumpsys display")
    d = device(serial)
    assert d.window_size() == (1080, 2400)
    assert d.rotation() == 0
    assert d.getprop("ro.product.model") == "sdk_gphone64_x86_64"
    bad = adb(serial, "shell", "wm size banana")
    assert bad.returncode == 255


def test_uiautomator_dump_to_tty_and_default_file(serial: str) -> None:
    out = sh(serial, "uiautomator dump /dev/tty")
    assert out.startswith("<?xml ") and out.endswith("</hierarchy>UI hierchary dumped to: /dev/tty\n")
    assert sh(serial, "uiautomator dump") == "UI hierchary dumped to: /sdcard/window_dump.xml\n"
    assert sh(serial, "cat /sdcard/window_dump.xml").startswith("<?xml ")
    # adbutils' own recipe (rm -f X; uiautomator dump X && echo success), then a pull of X.
    assert device(serial).dump_hierarchy().startswith("<?xml")


def test_input_with_bad_arguments(serial: str) -> None:
    bad = adb(serial, "shell", "input tap x 10")
    assert bad.returncode == 255
    assert b'NumberFormatException: For input string: "x"' in bad.stderr
    unknown = adb(serial, "shell", "input wiggle")
    assert unknown.returncode == 1
    assert unknown.stderr == b"Error: Unknown command: wiggle\n"
