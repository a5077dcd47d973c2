"""torchrun.py — torch.distributed.run (torchrun) with one compatibility fix, for train.py's launcher.

Debian's torch 1.13 on Python 3.11: Std.from_str("0") (the default --redirects/--tee) returns None, because
iterating an IntFlag no longer yields its zero member, and the launch then fails in to_map ("'NoneType' object
has no attribute 'get'"). The fix maps that None back to Std.NONE; on a torch without the bug it changes nothing.
Arguments are torchrun's.
"""
import sys

from torch.distributed.elastic.multiprocessing import api

_from_str = api.Std.from_str


def _fixed(cls, vm):
    r = _from_str(vm)
    if r is None:
        return api.Std.NONE
    if isinstance(r, dict):
        return {k: api.Std.NONE if v is None else v for k, v in r.items()}
    return r


api.Std.from_str = classmethod(_fixed)

if __name__ == "__main__":
    from torch.distributed.run import main
    sys.argv[0] = "torchrun"
    main()
