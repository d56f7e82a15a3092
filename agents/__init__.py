"""simone.agents."""

__all__: tuple[str, ...] = ()
