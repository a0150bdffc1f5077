"""Warning classes of the library (filter them with ``warnings.simplefilter(..., LdpoptWarning)``)."""

__all__ = ["LdpoptWarning"]


class LdpoptWarning(UserWarning):
    """Base class of every warning ldpopt emits."""
