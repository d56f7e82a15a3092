"""simone.workflows."""

__all__: tuple[str, ...] = ()
