"""What the phone reads of an APK: that it is a zip holding AndroidManifest.xml, and the manifest's package
name and version code, from the compiled (binary) XML an APK carries.

The binary XML layout is AOSP's (frameworks/base libs/androidfw ResourceTypes.h): chunks of
(type u16, header size u16, size u32); a string pool (0x0001, UTF-16 or UTF-8 strings); start-element
chunks (0x0102) whose attributes are (namespace, name, raw value, typed value) by string index. Nothing
else of the APK (signatures, resources, code) is looked at.
"""

from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import dataclass

MANIFEST = "AndroidManifest.xml"
STRING_POOL, XML, START_ELEMENT = 0x0001, 0x0003, 0x0102
UTF8_FLAG = 0x100
TYPE_INT_DEC, TYPE_INT_HEX = 0x10, 0x11
NO_INDEX = 0xFFFFFFFF


class ApkError(Exception):
    """Not an APK the phone can install; `code` is PackageManager's failure name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Apk:
    package: str
    version_code: int


def read_apk(data: bytes, where: str) -> Apk:
    """The APK in `data` (installed from `where`, which failure messages name); ApkError if it is none."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            manifest = archive.read(MANIFEST) if MANIFEST in archive.namelist() else None
    except (zipfile.BadZipFile, OSError, EOFError):
        # ApkAssets cannot open a file that is no zip: ApkLiteParseUtils reports NOT_APK with the
        # IOException of libandroidfw's ApkAssets ("Failed to load asset path PATH").
        raise ApkError(
            "INSTALL_PARSE_FAILED_NOT_APK", f"Failed to parse {where}: Failed to load asset path {where}"
        ) from None
    try:
        attributes = manifest_attributes(manifest) if manifest is not None else {}
    except (struct.error, IndexError, UnicodeDecodeError, ValueError):
        attributes = {}
    package = attributes.get("package")
    if not isinstance(package, str) or not package:
        # A manifest missing, not binary XML, or without a package: ApkLiteParseUtils fails reading it
        # (UNEXPECTED_EXCEPTION). The text after the path is Android's exception's, which varies; left out.
        raise ApkError("INSTALL_PARSE_FAILED_UNEXPECTED_EXCEPTION", f"Failed to parse {where}")
    code = attributes.get("versionCode", 0)
    return Apk(package, code if isinstance(code, int) else 0)


def _strings(chunk: bytes) -> list[str]:
    count, _, flags, start = struct.unpack_from("<IIII", chunk, 8)
    header = struct.unpack_from("<H", chunk, 2)[0]
    offsets = struct.unpack_from(f"<{count}I", chunk, header)
    return [_string(chunk, start + off, flags & UTF8_FLAG != 0) for off in offsets]


def _length(data: bytes, pos: int, wide: bool) -> tuple[int, int]:
    """A string pool length (one or two units, the high bit saying two) and where what follows starts."""
    unit, fmt, high = (2, "<H", 0x8000) if wide else (1, "<B", 0x80)
    first = struct.unpack_from(fmt, data, pos)[0]
    if first & high:
        second = struct.unpack_from(fmt, data, pos + unit)[0]
        return ((first & ~high) << (16 if wide else 8)) | second, pos + 2 * unit
    return first, pos + unit


def _string(chunk: bytes, pos: int, utf8: bool) -> str:
    if utf8:
        _, pos = _length(chunk, pos, wide=False)  # the length in UTF-16 units
        size, pos = _length(chunk, pos, wide=False)
        return chunk[pos : pos + size].decode("utf-8")
    size, pos = _length(chunk, pos, wide=True)
    return chunk[pos : pos + 2 * size].decode("utf-16-le")


def manifest_attributes(xml: bytes) -> dict[str, str | int]:
    """The attributes of the binary manifest's first element (<manifest>), by name."""
    kind, header, _ = struct.unpack_from("<HHI", xml, 0)
    if kind != XML:
        raise ValueError("not a binary XML file")
    strings: list[str] = []
    pos = header
    while pos + 8 <= len(xml):
        kind, header, size = struct.unpack_from("<HHI", xml, pos)
        chunk = xml[pos : pos + size]
        if kind == STRING_POOL:
            strings = _strings(chunk)
        elif kind == START_ELEMENT:
            return _attributes(chunk, header, strings)
        if size < 8:
            break
        pos += size
    return {}


def _attributes(chunk: bytes, header: int, strings: list[str]) -> dict[str, str | int]:
    start, size, count = struct.unpack_from("<HHH", chunk, header + 8)
    out: dict[str, str | int] = {}
    for n in range(count):
        at = header + start + n * size
        _, name, raw, _, _, data_type, value = struct.unpack_from("<IIIHBBI", chunk, at)
        if raw != NO_INDEX:
            out[strings[name]] = strings[raw]
        elif data_type in (TYPE_INT_DEC, TYPE_INT_HEX):
            out[strings[name]] = value
    return out
