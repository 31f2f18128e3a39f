"""The phone's /system: Android's shell and toybox applets in /system/bin, the phone's own Android programs
(links to one small client, android_command.c, built once per host), `su`, `sqlite3`, and /system/etc.

/system/bin/sh is mksh, as on Android; every toybox applet Android would run from toybox is a link to it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from virtual_phone.errors import PhoneStartError
from virtual_phone.state.owners import Users

CLIENT = "android_command"
# Applets Android 14's toybox has (AOSP external/toybox android/device/generated/config.h: CFG_TR 1, ...) that
# Debian's toybox 0.8.9 is built without, and that scripts use: the host's GNU programs (in the sandbox's
# read-only /usr) stand in for them, so `tr` runs instead of "inaccessible or not found"; their error
# messages are GNU's.
FROM_HOST = ("tr", "dd", "diff", "expr", "gzip", "getopt", "stty")
# Applets this toybox has that Android's /system/bin does not run from toybox: the shell (mksh is), and `su`
# (a userdebug image's own: su.py).
NOT_FROM_TOYBOX = {"sh", "toysh", "su", "help"}
# sqlite3 of a userdebug image: the SQLite CLI, which opens an app's database (its folder is the app's) only
# for root (`su 0`, or after `adb root`). With users the kernel refuses the shell user the folder; without
# them (sandbox.py) this wrapper refuses it in the same words.
SQLITE3 = """#!/system/bin/sh
db= skip=
for a in "$@"; do
  if [ -n "$skip" ]; then skip=; continue; fi
  case $a in
  -separator|-newline|-nullvalue|-cmd|-init|-vfs|-mmap|-maxsize|-lookaside|-pagecache|-heap) skip=1 ;;
  -*) ;;
  *) db=$a; break ;;
  esac
done
case $db in /*) ;; ?*) db=$PWD/$db ;; esac
case $db in
/data/data/*|/data/user/*|/data/user_de/*)
  if [ "$VIRTUAL_PHONE_UID" != 0 ]; then
    echo "Error: unable to open database \\"$a\\": unable to open database file" >&2
    exit 1
  fi ;;
esac
exec {sqlite3} "$@"
"""
# chmod with users: shared storage's FUSE daemon answers a mode change with success and changes nothing
# (AOSP packages/providers/MediaProvider/jni/FuseDaemon.cpp, pf_setattr: "chmod/chown should NEVER be
# implemented"), so those files are left out; the others go to toybox's chmod.
CHMOD = """#!/system/bin/sh
set -A opts; mode=
while [ $# -gt 0 ]; do
  case $1 in -*) set -A opts -- "${opts[@]}" "$1" ;; *) mode=$1; shift; break ;; esac
  shift
done
set -A files
for f in "$@"; do
  case $(realpath -- "$f" 2>/dev/null) in
  /storage/emulated/0|/storage/emulated/0/*) ;;
  *) set -A files -- "${files[@]}" "$f" ;;
  esac
done
[ -z "$mode" ] || [ $# -eq 0 ] || [ ${#files[@]} -gt 0 ] || exit 0
exec /system/bin/toybox chmod "${opts[@]}" $mode "${files[@]}"
"""
# Toybox programs that read the clock run under libfaketime, which starts them at the phone's time
# (state/phone_clock.py keeps it in /etc/phone_time, as epoch seconds), wherever the host's clock is. Only
# these get it: preloading it costs every program a third of a millisecond.
FAKETIME = (
    "LD_PRELOAD={lib} FAKETIME_TIMESTAMP_FILE=/etc/phone_time FAKETIME_NO_CACHE=1 FAKETIME_FMT=%s "
    "FAKETIME_DONT_FAKE_MONOTONIC=1"
)
FIND = """#!/system/bin/sh
{faketime} exec /system/bin/toybox find "$@"
"""
# toybox date sets the clock with `-s DATE` or a lone `MMDDhhmm[[CC]YY][.ss]`; root's setting goes to the
# phone's clock through AlarmManager's setTime, transaction 2 of IAlarmManager (`service call alarm 2 i64
# MS`). The shell user's fails in toybox, as on a device: `date: cannot set date: Operation not permitted`.
DATE = """#!/system/bin/sh
case $#:$1 in
2:-s) when=$2 ;;
1:[0-9]*) when=$1 ;;
*) when= ;;
esac
if [ -z "$when" ] || [ "$(/system/bin/toybox id -u)" != 0 ]; then
  {faketime} exec /system/bin/toybox date "$@"
fi
secs=$({faketime} /system/bin/toybox date -d "$when" +%s) || exit 1
/system/bin/service call alarm 2 i64 ${{secs}}000 >/dev/null || exit 1
{faketime} exec /system/bin/toybox date
"""
# Interactive shells print Android's prompt: `emu64x:/ $ ` (`#` for root).
MKSHRC = """if [ "${USER}" = root ]; then PS1_END='# '; else PS1_END='$ '; fi
PS1='${HOSTNAME:-localhost}:${PWD:-?} '"$PS1_END"
"""


@functools.cache
def toybox_applets(toybox: str) -> tuple[str, ...]:
    return tuple(subprocess.run([toybox], capture_output=True, text=True, check=True).stdout.split())


SPAWN_AS = "spawn_as"  # the zygote's helper that starts a program as a user (spawn_as.c), in /system/libexec


def build_client(cc: str, name: str = CLIENT) -> Path:
    """The compiled program `name` (android_command.c, spawn_as.c), cached under the user's cache folder by
    its source's hash."""
    source = Path(__file__).with_name(f"{name}.c")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "virtual-phone"
    binary = cache / f"{name}-{digest}"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{name}-")
    os.close(fd)
    build = subprocess.run([cc, "-O2", "-o", tmp, str(source)], capture_output=True, text=True)
    if build.returncode != 0:
        os.unlink(tmp)
        raise PhoneStartError(f"could not build the phone's {name} with {cc}: {build.stderr.strip()}")
    os.replace(tmp, binary)  # atomic: phones starting together do not see a half-written file
    return binary


def install(
    system: Path, tools: dict[str, str], android_programs: Iterable[str], users: Users | None
) -> None:
    """Fills `system` (the tree's /system) with the programs and files above; `users`: the sandbox has
    Android's users (None: it has not, and sqlite3 is the wrapper above)."""
    bin_dir, etc = system / "bin", system / "etc"
    bin_dir.mkdir(parents=True, exist_ok=True)
    etc.mkdir(parents=True, exist_ok=True)
    client = bin_dir / CLIENT
    client.write_bytes(build_client(tools["cc"]).read_bytes())
    client.chmod(0o755)
    libexec = system / "libexec"
    libexec.mkdir(exist_ok=True)
    (libexec / SPAWN_AS).write_bytes(build_client(tools["cc"], SPAWN_AS).read_bytes())
    (libexec / SPAWN_AS).chmod(0o755)
    links = {"sh": tools["mksh"], "toybox": tools["toybox"]}
    programs = set(android_programs)
    for applet in toybox_applets(tools["toybox"]):
        if applet not in NOT_FROM_TOYBOX and applet not in programs:
            links[applet] = "toybox"
    links |= {name: CLIENT for name in (*programs, "su")}
    for name in FROM_HOST:
        host = shutil.which(name, path="/usr/bin:/usr/sbin")
        if name not in links and host is not None:
            links[name] = os.path.realpath(host)
    if users is not None:
        links["sqlite3"] = tools["sqlite3"]
    for name, target in links.items():
        (bin_dir / name).symlink_to(target)
    scripts = {"sqlite3": SQLITE3.format(sqlite3=tools["sqlite3"])} if users is None else {"chmod": CHMOD}
    for name, text in (
        scripts.items()
        | {
            name: text.format(faketime=FAKETIME.format(lib=tools["libfaketime"]))
            for name, text in (("date", DATE), ("find", FIND))
        }.items()
    ):
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (etc / "mkshrc").write_text(MKSHRC)
    names = users or Users(())
    (etc / "passwd").write_text(names.passwd())
    (etc / "group").write_text(names.group())
