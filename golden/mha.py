"""MHA golden cases (placeholder until the MHA part lands)."""


def smoke_cases():
    return []


def ci_cases():
    return []


def generate(case):
    raise NotImplementedError
