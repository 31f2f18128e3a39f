"""`content query|insert|update|delete` on the virtual phone, with the usage, row format and error text of
AOSP's `frameworks/base/cmds/content/src/com/android/commands/content/Content.java` (Android 14).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from virtual_phone.schema.appdata_schema import Value
from virtual_phone.shell.program import Caller, Output, command_table
from virtual_phone.state import content_providers
from virtual_phone.state.content_providers import ProviderError

USAGE = (
    "usage: adb shell content [subcommand] [options]\n"
    "\n"
    "usage: adb shell content insert --uri <URI> [--user <USER_ID>]"
    " --bind <BINDING> [--bind <BINDING>...] [--extra <BINDING>...]\n"
    "  <URI> a content provider URI.\n"
    "  <BINDING> binds a typed value to a column and is formatted:\n"
    "  <COLUMN_NAME>:<TYPE>:<COLUMN_VALUE> where:\n"
    "  <TYPE> specifies data type such as:\n"
    "  b - boolean, s - string, i - integer, l - long, f - float, d - double, n - null\n"
    "  Note: Omit the value for passing an empty string, e.g column:s:\n"
    "  Example:\n"
    '  # Add "new_setting" secure setting with value "new_value".\n'
    "  adb shell content insert --uri content://settings/secure --bind name:s:new_setting"
    " --bind value:s:new_value\n"
    "\n"
    "usage: adb shell content update --uri <URI> [--user <USER_ID>]"
    " [--where <WHERE>] [--extra <BINDING>...]\n"
    "  <WHERE> is a SQL style where clause in quotes (You have to escape single quotes"
    " - see example below).\n"
    "  Example:\n"
    '  # Change "new_setting" secure setting to "newer_value".\n'
    "  adb shell content update --uri content://settings/secure --bind"
    " value:s:newer_value --where \"name='new_setting'\"\n"
    "\n"
    "usage: adb shell content delete --uri <URI> [--user <USER_ID>] --bind <BINDING>"
    " [--bind <BINDING>...] [--where <WHERE>] [--extra <BINDING>...]\n"
    "  Example:\n"
    '  # Remove "new_setting" secure setting.\n'
    "  adb shell content delete --uri content://settings/secure "
    "--where \"name='new_setting'\"\n"
    "\n"
    "usage: adb shell content query --uri <URI> [--user <USER_ID>]"
    " [--projection <PROJECTION>] [--where <WHERE>] [--sort <SORT_ORDER>]"
    " [--extra <BINDING>...]\n"
    "  <PROJECTION> is a list of colon separated column names and is formatted:\n"
    "  <COLUMN_NAME>[:<COLUMN_NAME>...]\n"
    "  <SORT_ORDER> is the order in which rows in the result should be sorted.\n"
    "  Example:\n"
    '  # Select "name" and "value" columns from secure settings where "name" is '
    'equal to "new_setting" and sort the result by name in ascending order.\n'
    "  adb shell content query --uri content://settings/secure --projection name:value"
    ' --where "name=\'new_setting\'" --sort "name ASC"\n'
    "\n"
    "usage: adb shell content call --uri <URI> --method <METHOD> [--arg <ARG>]\n"
    "       [--extra <BINDING> ...]\n"
    "  <METHOD> is the name of a provider-defined method\n"
    "  <ARG> is an optional string argument\n"
    "  <BINDING> is like --bind above, typed data of the form <KEY>:{b,s,i,l,f,d}:<VAL>\n"
    "\n"
    "usage: adb shell content read --uri <URI> [--user <USER_ID>]\n"
    "  Example:\n"
    "  adb shell 'content read --uri content://settings/system/ringtone_cache' > host.ogg\n"
    "\n"
    "usage: adb shell content write --uri <URI> [--user <USER_ID>]\n"
    "  Example:\n"
    "  adb shell 'content write --uri content://settings/system/ringtone_cache' < host.ogg\n"
    "\n"
    "usage: adb shell content gettype --uri <URI> [--user <USER_ID>]\n"
    "  Example:\n"
    "  adb shell content gettype --uri content://media/internal/audio/media/\n"
    "\n"
)
# Which options each operation takes (Content.java's Parser); anything else is "Unsupported argument".
OPTIONS = {
    "query": {"--uri", "--user", "--where", "--sort", "--projection", "--extra"},
    "insert": {"--uri", "--user", "--bind", "--extra"},
    "update": {"--uri", "--user", "--where", "--bind", "--extra"},
    "delete": {"--uri", "--user", "--where", "--extra"},
}
# The client-side frames of a stack trace after the provider's exception (stand-ins for Android's lines).
_REMOTE_FRAMES = (
    "\tat android.database.DatabaseUtils.readExceptionFromParcel(DatabaseUtils.java:172)\n"
    "\tat android.database.DatabaseUtils.readExceptionFromParcel(DatabaseUtils.java:142)\n"
    "\tat android.content.ContentProviderProxy.{op}(ContentProviderNative.java:{line})\n"
    "\tat com.android.commands.content.Content${cls}Command.onExecute(Content.java:{own})\n"
)
_LOCAL_FRAMES = (
    "\tat com.android.commands.content.Content$Command.execute(Content.java:546)\n"
    "\tat com.android.commands.content.Content.main(Content.java:735)\n"
    "\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n"
    "\tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:371)\n"
)
_FRAME_LINES = {"query": (481, 709), "insert": (520, 603), "update": (573, 782), "delete": (552, 622)}


class UsageError(Exception):
    """A command line Content.java's parser refuses: it prints the usage and `[ERROR] message`."""


@dataclass
class Request:
    operation: str
    uri: str | None = None
    projection: list[str] | None = None
    where: str | None = None
    sort: str | None = None
    values: dict[str, Value] = field(default_factory=dict)


def _value(option: str, args: list[str], i: int) -> str:
    """The value after an option; Content.java refuses a missing one or one that starts with `--`."""
    value = args[i + 1] if i + 1 < len(args) else ""
    if not value or value.startswith("--"):
        raise UsageError(f"No value for argument: {option}")
    return value


def _split_escaped(text: str) -> list[str]:
    """Splits a binding at `:`; a backslash takes the next character literally."""
    parts, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 1
            if i == len(text):
                raise UsageError("Invalid escaping")
            cur.append(text[i])
        elif c == ":":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _java_number(kind: str, text: str) -> Value:
    try:
        if kind in ("i", "l"):
            value = int(text.strip() if kind == "l" else text)
            limit = 2**31 if kind == "i" else 2**63
            if not -limit <= value < limit or text != text.strip():
                raise ValueError(text)
            return value
        return float(text)
    except ValueError:
        raise UsageError(f'For input string: "{text}"') from None


def parse_binding(text: str | None) -> tuple[str, Value]:
    """`COLUMN:TYPE:VALUE` as Content.java reads a --bind (None: the option was the last argument)."""
    parts = _split_escaped(text) if text else []
    if len(parts) != 3:
        raise UsageError(f"Binding not well formed: {'null' if text is None else text}")
    column, kind, value = parts
    if kind == "s":
        return column, value
    kind = kind.lower()
    if kind == "b":
        return column, 1 if value.lower() == "true" else 0
    if kind in ("i", "l", "f", "d"):
        return column, _java_number(kind, value)
    if kind == "n":
        return column, None
    raise UsageError(f"Unsupported type: {parts[1]}")


def parse(args: list[str]) -> Request:
    op = args[0] if args else "null"
    if op not in OPTIONS:
        raise UsageError(f"Unsupported operation: {op}")
    req = Request(op)
    i = 1
    while i < len(args):
        opt = args[i]
        if opt not in OPTIONS[op]:
            raise UsageError(f"Unsupported argument: {opt}")
        if opt == "--bind" or opt == "--extra":
            column, value = parse_binding(args[i + 1] if i + 1 < len(args) else None)
            if opt == "--bind":
                req.values[column] = value
        else:
            value_text = _value(opt, args, i)
            if opt == "--uri":
                req.uri = value_text
            elif opt == "--user":
                _java_number("i", value_text)
            elif opt == "--where":
                req.where = value_text
            elif opt == "--sort":
                req.sort = value_text
            elif opt == "--projection":
                req.projection = [p.strip() for p in value_text.split(":")]
        i += 2
    if req.uri is None:
        raise UsageError("Content provider URI not specified. Did you specify --uri argument?")
    if op in ("insert", "update") and not req.values:
        raise UsageError("Bindings not specified. Did you specify --bind argument(s)?")
    return req


def java_float(x: float) -> str:
    """String.valueOf(cursor.getFloat(...)): the float32's shortest text, in Java's decimal or E notation."""
    f32 = struct.unpack("<f", struct.pack("<f", x))[0]
    digits = next(
        d for d in range(1, 10) if struct.unpack("<f", struct.pack("<f", float(f"{f32:.{d}g}")))[0] == f32
    )
    value = float(f"{f32:.{digits}g}")
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    mantissa, _, exp = f"{value:.{max(1, digits - 1)}e}".partition("e")
    mantissa = mantissa.rstrip("0")
    return f"{mantissa}{'0' if mantissa.endswith('.') else ''}E{int(exp)}"


def format_value(value: Value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return "BLOB"
    if isinstance(value, float):
        return java_float(value)
    return str(value)


def format_rows(names: list[str], rows: list[tuple[Value, ...]]) -> str:
    if not rows:
        return "No result found.\n"
    return "".join(
        f"Row: {n} " + ", ".join(f"{c}={format_value(v)}" for c, v in zip(names, row, strict=True)) + "\n"
        for n, row in enumerate(rows)
    )


def _execute(sh: Caller, req: Request, io: Output) -> None:
    store = sh.phone.data
    assert req.uri is not None
    target = content_providers.resolve(req.uri)
    if req.operation == "query":
        result = content_providers.query(store, target, req.projection, req.where, req.sort)
        io.out(format_rows(*result) if result is not None else "No result found.\n")
        return
    if req.operation == "insert":
        content_providers.insert(store, target, req.values)
    elif req.operation == "update":
        content_providers.update(store, target, req.values, req.where)
    else:
        content_providers.delete(store, target, req.where)
    sh.phone.prerender_soon()


def _content(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    try:
        req = parse(args)
    except UsageError as e:
        io.out(f"{USAGE}\n[ERROR] {e}\n")
        return 0
    try:
        _execute(sh, req, io)
    except ProviderError as e:
        # Content.java catches the exception, prints it with its stack trace and exits normally (status 0).
        authority = content_providers.authority_of(req.uri or "")
        local = e.java_class == "java.lang.IllegalStateException"
        line, own = _FRAME_LINES[req.operation]
        frames = (
            ""
            if local
            else _REMOTE_FRAMES.format(op=req.operation, line=line, cls=req.operation.capitalize(), own=own)
        )
        io.err(f"Error while accessing provider:{authority}\n")
        io.err(f"{e.java_class}: {e.message}\n{frames}{_LOCAL_FRAMES}")
    return 0


COMMANDS = command_table(_content)
