"""simone.providers — evidence sources behind the Provider protocol, and the clients they talk to."""

from simone.providers._folder import FolderProvider as FolderProvider, Section as Section, Skipped as Skipped

__all__ = ("FolderProvider", "Section", "Skipped")
