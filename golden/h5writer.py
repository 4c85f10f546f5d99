"""Writes golden files in the layout of golden/SCHEMA.md, byte for byte reproducibly.

Reproducibility: no object records timestamps (track_times off for the file's root group,
every group and every dataset), groups and datasets are created in a fixed (sorted)
order, attributes in the order given, strings are fixed-length ASCII, and the format is
pinned to the HDF5 1.10 file format (readable by libhdf5 >= 1.10). The bytes also depend
on the HDF5 library h5py bundles, so h5py is pinned in requirements.txt.
"""

from __future__ import annotations

import h5py
import numpy as np

SCHEMA_VERSION = 1
SEMANTICS_VERSION = "1"

# Datasets up to this size are stored in the object header (no chunk index, no padding;
# the header is checksummed); larger ones are chunked (one chunk) and compressed with
# shuffle + deflate, with a Fletcher-32 checksum: corruption anywhere is detected.
COMPACT_MAX_BYTES = 8192

_TYPES = {
    np.dtype("<f8"): h5py.h5t.IEEE_F64LE,
    np.dtype("<f4"): h5py.h5t.IEEE_F32LE,
    np.dtype("<u2"): h5py.h5t.STD_U16LE,
    np.dtype("u1"): h5py.h5t.STD_U8LE,
    np.dtype("<i4"): h5py.h5t.STD_I32LE,
}


def _attr(obj, name, value):
    if isinstance(value, str):
        data = np.bytes_(value.encode("ascii"))
        tid = h5py.h5t.C_S1.copy()
        tid.set_size(max(len(data), 1))
        tid.set_strpad(h5py.h5t.STR_NULLPAD)
        obj.attrs.create(name, data, dtype=h5py.Datatype(tid))
    elif isinstance(value, np.uint64):
        obj.attrs.create(name, value, dtype="<u8")
    elif isinstance(value, (np.int64, int)):
        obj.attrs.create(name, np.int64(value), dtype="<i8")
    elif isinstance(value, float):
        obj.attrs.create(name, value, dtype="<f8")
    else:
        raise TypeError(f"attribute {name}: unsupported value {value!r}")


def _group(parent, name):
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    gid = h5py.h5g.create(parent.id, name.encode("utf-8"), gcpl=gcpl)
    return h5py.Group(gid)


def _dataset(group, name, array, attrs):
    array = np.ascontiguousarray(array)
    tid = _TYPES[array.dtype]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    if array.size and array.nbytes <= COMPACT_MAX_BYTES:
        dcpl.set_layout(h5py.h5d.COMPACT)
    elif array.size:
        dcpl.set_chunk(array.shape)
        dcpl.set_shuffle()
        dcpl.set_deflate(9)
        dcpl.set_fletcher32()  # compact data sit in the checksummed object header
    space = h5py.h5s.create_simple(array.shape, array.shape)
    dsid = h5py.h5d.create(group.id, name.encode("ascii"), tid, space, dcpl=dcpl)
    if array.size:
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, array, mtype=tid)
    ds = h5py.Dataset(dsid)
    for k, v in attrs.items():
        _attr(ds, k, v)


def _write_groups(parent, groups):
    for name, datasets, attrs in groups:
        g = _group(parent, name)
        for k, v in attrs.items():
            _attr(g, k, v)
        for ds_name, array, ds_attrs in datasets:
            _dataset(g, ds_name, array, ds_attrs)


def write_file(path, root_attrs, sdpa_groups, mha_groups):
    """root_attrs: dict; *_groups: [(name, [(dataset, array, attrs)], attrs)] in order."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    with h5py.File(fid) as f:
        for k, v in root_attrs.items():
            _attr(f, k, v)
        _write_groups(_group(f, "sdpa"), sdpa_groups)
        if mha_groups:
            _write_groups(_group(f, "mha"), mha_groups)
