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


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            "[router]\nweights = { documents = inf }\n",
            "router.weights.documents: Input should be a finite number",
        ),
        ("[router]\nweights = { documents = nan }\n", "router.weights.documents"),
        ("[router]\nweights = { documents = -1.0 }\n", "greater than or equal to 0"),
        (
            "[router]\nprovider_timeout_s = inf\n",
            "router.provider_timeout_s: Input should be a finite number",
        ),
        ("[web]\nsearch_ttl_s = inf\n", "web.search_ttl_s"),
    ],
)
def test_every_number_is_finite_and_weights_are_not_negative(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "simone.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_settings()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"documents": Infinity}', "finite"),
        ('{"documents": NaN}', "router.weights.documents"),
        ("notjson", "SIMONE_ROUTER__WEIGHTS"),
    ],
)
def test_environment_values_are_config_errors_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("SIMONE_ROUTER__WEIGHTS", value)
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings()
    text = str(caught.value)
    assert "\n" not in text and "SIMONE_ROUTER__WEIGHTS" in text
    assert value not in text, "values are never echoed (they may be secrets)"


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "simone.toml").write_bytes(b"[router]\nrrf_k = 30  # caf\xe9\n")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at offset 26\) — save it as UTF-8"):
        load_settings()


def test_config_errors_are_one_line_and_say_where_to_fix_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "simone.toml").write_text("[router]\nrrf_k = 0\ndefault_limit = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    text = str(caught.value)
    assert "\n" not in text and "For further information" not in text
    assert text.endswith(f"— fix it in {tmp_path / 'simone.toml'}")
    monkeypatch.setenv("SIMONE_ROUTER__RRF_K", "-3")
    with pytest.raises(ConfigError, match=r"— fix it in SIMONE_ROUTER__RRF_K or .*simone\.toml"):
        load_settings()
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    "toml",
    [
        '[web]\ncache_url = "redis://:hunter2@cache.internal:6379/0"\n',
        '[lexical]\nignore_words = []\n[web]\nsearxng_url = "http://user:hunter2@search.internal/"\n',
    ],
)
def test_a_password_inside_a_url_in_a_file_is_refused(tmp_path: Path, toml: str) -> None:
    path = tmp_path / "simone.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match="password inside the URL") as caught:
        load_settings(config_file=path)
    assert "hunter2" not in str(caught.value)
