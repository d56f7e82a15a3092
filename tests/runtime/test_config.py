from __future__ import annotations

from pathlib import Path

import pytest
from simone.runtime import ConfigError, load_settings


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(__import__("os").environ):
        if key.startswith("SIMONE_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def test_defaults_need_no_file() -> None:
    settings = load_settings()
    assert settings.router.rrf_k == 60
    assert settings.web.search_ttl_s == 1800 and settings.web.page_ttl_s == 86400
    assert settings.data_dir.name == "simone"


def test_toml_then_environment_then_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "simone.toml").write_text('data_dir = "/tmp/x"\n[router]\nrrf_k = 30\ndefault_limit = 7\n')
    assert load_settings().router.rrf_k == 30
    monkeypatch.setenv("SIMONE_ROUTER__RRF_K", "45")
    settings = load_settings()
    assert settings.router.rrf_k == 45 and settings.router.default_limit == 7
    assert load_settings(data_dir=tmp_path / "d").data_dir == tmp_path / "d"


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(Exception, match="frozen"):
        settings.router.rrf_k = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[router]\nrrf_k = 0\n", "router.rrf_k"),
        ("[router]\nunknown = 1\n", "router.unknown"),
        ("nonsense = true\n", "nonsense"),
        ("[router\n", "not valid TOML"),
        ('[web]\nbrave_api_key = "sk-123"\n', "SIMONE_WEB__BRAVE_API_KEY"),
    ],
)
def test_bad_config_is_a_config_error_that_names_the_key(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "simone.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_settings()


def test_token_counts_are_not_mistaken_for_secrets(tmp_path: Path) -> None:
    (tmp_path / "simone.toml").write_text(
        "[router]\ndefault_max_tokens = 900\n[index]\nchunk_tokens = 128\n[web]\nmax_context_tokens = 2000\n"
    )
    settings = load_settings()
    assert settings.router.default_max_tokens == 900 and settings.index.chunk_tokens == 128


def test_secrets_come_from_the_environment_and_stay_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMONE_WEB__BRAVE_API_KEY", "sk-secret")
    settings = load_settings()
    assert settings.web.brave_api_key is not None
    assert settings.web.brave_api_key.get_secret_value() == "sk-secret"
    assert "sk-secret" not in repr(settings) and "sk-secret" not in settings.model_dump_json()


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
