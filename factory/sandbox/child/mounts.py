"""The runner's mount namespace (`unshare --mount`): a size-capped tmpfs on the scratch
directory, and the Python installation made reachable for `nobody`.

Both happen as root before the worker drops its privileges; the namespace dies with
the child, and the tmpfs with it. Mount propagation is private (unshare's default),
so nothing here is seen on the host."""

from __future__ import annotations

import ctypes
import os
import stat

MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
OPEN_TREE_CLONE, AT_RECURSIVE, AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, -100, 4
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429  # the same on every architecture
MAX_PASSES = 8  # a blocked directory under a blocked directory: each pass uncovers one level


def libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def mount_tmpfs(target: str, options: str, flags: int) -> None:
    if libc().mount(b"tmpfs", target.encode(), b"tmpfs", ctypes.c_ulong(flags), options.encode()) != 0:
        raise OSError(ctypes.get_errno(), f"mount tmpfs on {target}")


def scratch_tmpfs(scratch: str, size_mb: int, files: int, ids: tuple[int, int] | None) -> None:
    """The scratch directory becomes a tmpfs of `size_mb` MiB and `files` inodes, owned by the worker."""
    owner = f",uid={ids[0]},gid={ids[1]}" if ids else ""
    mount_tmpfs(scratch, f"size={size_mb}m,nr_inodes={files},mode=0700{owner}", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def can_traverse(path: str, uid: int, gid: int) -> bool:
    info = os.stat(path)
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def blocked(paths: list[str], uid: int, gid: int) -> dict[str, set[str]]:
    """For each path, its first ancestor `uid` cannot pass, with the child on the way."""
    found: dict[str, set[str]] = {}
    for path in paths:
        parts = os.path.realpath(path).strip("/").split("/")
        for depth in range(len(parts) - 1):
            ancestor = "/" + "/".join(parts[:depth])
            if os.path.lexists(ancestor) and not can_traverse(ancestor, uid, gid):
                found.setdefault(ancestor, set()).add(parts[depth])
                break
    return found


def uncover(directory: str, children: set[str]) -> None:
    """Cover `directory` with an empty world-passable tmpfs, and put back only `children`
    (detached bind mounts, moved into place): everything else in it stays out of sight."""
    lib = libc()
    trees = {}
    for child in children:
        source = os.path.join(directory, child).encode()
        flags = ctypes.c_uint(OPEN_TREE_CLONE | AT_RECURSIVE)
        fd = int(lib.syscall(ctypes.c_long(SYS_OPEN_TREE), ctypes.c_int(AT_FDCWD), source, flags))
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"open_tree {directory}/{child}")
        trees[child] = (fd, os.path.isdir(os.path.join(directory, child)))
    mount_tmpfs(directory, "mode=0755,size=64k,nr_inodes=256", MS_NOSUID | MS_NODEV)
    for child, (fd, is_dir) in trees.items():
        target = os.path.join(directory, child)
        if is_dir:
            os.mkdir(target)
        else:
            open(target, "w").close()
        moved = lib.syscall(ctypes.c_long(SYS_MOVE_MOUNT), ctypes.c_int(fd), b"", ctypes.c_int(AT_FDCWD),
                            target.encode(), ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH))  # fmt: skip
        os.close(fd)
        if moved != 0:
            raise OSError(ctypes.get_errno(), f"move_mount {target}")


def expose(paths: list[str], ids: tuple[int, int]) -> list[str]:
    """Make every path in `paths` reachable for `ids` (a Python installation under /root, say);
    returns the directories covered. Raises OSError where that cannot be done."""
    covered: list[str] = []
    for _ in range(MAX_PASSES):
        found = blocked([path for path in paths if os.path.exists(path)], *ids)
        if not found:
            return covered
        for directory in sorted(found, key=len):
            uncover(directory, found[directory])
            covered.append(directory)
    raise OSError(f"paths still blocked after {MAX_PASSES} passes: {sorted(blocked(paths, *ids))}")
