"""simone.providers."""

__all__: tuple[str, ...] = ()
