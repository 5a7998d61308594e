#!/usr/bin/env python3
"""Make or remove a znode with exact bytes, for the zkl command's tests.

Usage: zknode.py HOSTS create PATH HEX [unreadable]
       zknode.py HOSTS set PATH HEX
       zknode.py HOSTS delete PATH
       zknode.py HOSTS deleteall PATH      (PATH and all below it; gone is fine)

Talks to ZooKeeper through libzookeeper_mt (ctypes), so the data may hold
any bytes (invalid UTF-8 included). "create" makes a persistent node and
prints its path; with "unreadable" its ACL lets only an address nobody
connects from (ip 192.0.2.1) read it, so its data cannot be read while its
parent can still be listed and the node deleted.
"""
import ctypes
import sys
import time

lib = ctypes.CDLL("libzookeeper_mt.so.2")
lib.zookeeper_init.restype = ctypes.c_void_p
lib.zookeeper_init.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int,
                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
lib.zoo_state.argtypes = [ctypes.c_void_p]
lib.zoo_set_debug_level.argtypes = [ctypes.c_int]
lib.zookeeper_close.argtypes = [ctypes.c_void_p]


class Id(ctypes.Structure):
    _fields_ = [("scheme", ctypes.c_char_p), ("id", ctypes.c_char_p)]


class ACL(ctypes.Structure):
    _fields_ = [("perms", ctypes.c_int32), ("id", Id)]


class ACLVector(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int32), ("data", ctypes.POINTER(ACL))]


class StringVector(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int32), ("data", ctypes.POINTER(ctypes.c_char_p))]


lib.deallocate_String_vector.argtypes = [ctypes.POINTER(StringVector)]


def delete_all(zh, path):
    """Delete path and everything below it; a node already gone is fine."""
    kids = StringVector()
    rc = lib.zoo_get_children(zh, path.encode(), 0, ctypes.byref(kids))
    if rc == -101:  # ZNONODE
        return 0
    if rc != 0:
        return rc
    names = [kids.data[i].decode() for i in range(kids.count)]
    lib.deallocate_String_vector(ctypes.byref(kids))
    for name in names:
        rc = delete_all(zh, path.rstrip("/") + "/" + name)
        if rc != 0:
            return rc
    rc = lib.zoo_delete(zh, path.encode(), -1)
    return 0 if rc == -101 else rc


def main():
    hosts, cmd, path = sys.argv[1], sys.argv[2], sys.argv[3]
    lib.zoo_set_debug_level(1)
    zh = lib.zookeeper_init(hosts.encode(), None, 10000, None, None, 0)
    end = time.monotonic() + 15
    while lib.zoo_state(ctypes.c_void_p(zh)) != 3:  # ZOO_CONNECTED_STATE
        if time.monotonic() > end:
            sys.exit("zknode: no connection to " + hosts)
        time.sleep(0.05)
    zh = ctypes.c_void_p(zh)
    rc = 0
    if cmd in ("create", "set"):
        data = bytes.fromhex(sys.argv[4])
        if cmd == "set":
            rc = lib.zoo_set(zh, path.encode(), data, len(data), -1)
        else:
            if len(sys.argv) > 5 and sys.argv[5] == "unreadable":
                acl = ACL(31, Id(b"ip", b"192.0.2.1"))
                acls = ACLVector(1, ctypes.pointer(acl))
            else:
                acl = ACL(31, Id(b"world", b"anyone"))
                acls = ACLVector(1, ctypes.pointer(acl))
            buf = ctypes.create_string_buffer(1024)
            rc = lib.zoo_create(zh, path.encode(), data, len(data), ctypes.byref(acls), 0,
                                buf, 1024)
            if rc == 0:
                print(buf.value.decode())
    elif cmd == "delete":
        rc = lib.zoo_delete(zh, path.encode(), -1)
    elif cmd == "deleteall":
        rc = delete_all(zh, path)
    else:
        sys.exit("zknode: unknown command " + cmd)
    lib.zookeeper_close(zh)
    if rc != 0:
        sys.exit("zknode: %s %s: ZooKeeper error %d" % (cmd, path, rc))


main()
