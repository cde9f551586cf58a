"""Each device's model as a number, for passes over every device in numpy: a model's facts
(its kind, a flag) are tested once per model and spread over the devices in C, where a pass
over the 1.7 M devices of 8,192 NVL72 racks in Python took a second or more. Kept in the
system's memo (``System.memo``); the compiled-system cache fills it from its device columns.
This module imports nothing of the project, so every view and ``System`` itself may use it."""

from __future__ import annotations

from operator import attrgetter

_MODEL = attrgetter("model")


def model_ids(system):
    """Each device's model as a number (its ``id``) in a numpy array, and the models by
    number: made in C (``map``), where a pass over 1.7 M devices in Python took seconds."""
    import numpy as np

    found = system.memo.get("model_ids")
    if found is None:
        devices = system.devices
        ids = np.fromiter(map(id, map(_MODEL, devices)), dtype=np.int64, count=len(devices))
        # each model's first device is the first of a run of one model: the runs' heads
        # (a few per instance) are sorted, not every device
        heads = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else ids
        models = {id(d.model): d.model for d in
                  (devices[i] for i in heads[np.unique(ids[heads],
                                                       return_index=True)[1]].tolist())}
        found = system.memo["model_ids"] = (ids, models)
    return found


def model_numbers(system):
    """Each device's model as a small number (numpy int32 array by device index) and the
    models in number order (in any order: readers only index it by these numbers); kept per
    system (the compiled-system cache reads it back from its device columns). What
    whole-system passes test a model's facts with: once per model, spread over the devices."""
    import numpy as np

    found = system.memo.get("model_numbers")
    if found is None:
        ids, models = model_ids(system)
        codes = np.fromiter(models, dtype=np.int64, count=len(models))
        order = np.argsort(codes)
        numbers = order[np.searchsorted(codes, ids, sorter=order)].astype(np.int32)
        found = system.memo["model_numbers"] = (numbers, list(models.values()))
    return found


def model_flags(system, test):
    """``test(model)`` of each device's model as a numpy bool array by device index, ``test``
    called once per model."""
    import numpy as np

    numbers, models = model_numbers(system)
    return np.array([bool(test(m)) for m in models], dtype=np.bool_)[numbers] if models \
        else np.zeros(len(numbers), dtype=np.bool_)
