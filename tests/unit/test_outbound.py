"""The outbound policy without sockets: origins, what may be shown of a redirect's target, the SDKs' httpx2 client
bound to its origin, the `redirect` failure kind and its stop line, and header values / secret-named body fields
never written (run.json, logs, the web UI's start form)."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from llmload import contract
from llmload.client import outbound
from llmload.client.errors import Redirect, error_for_status
from llmload.client.request import StreamResult
from llmload.run.failures.guard import RunGuard
from llmload.run.options import knobs
from tests.helpers import swarm_app


def test_origins_compare_scheme_host_and_port_and_show_no_userinfo_path_or_query():
    assert outbound.origin("HTTPS://User:pw@Api.Example/v1?x=1") == ("https", "api.example", 443)
    assert outbound.same_origin("http://127.0.0.1/v1", "http://127.0.0.1:80/metrics")
    assert not outbound.same_origin("http://127.0.0.1:8000/v1", "http://127.0.0.2:8000/v1")
    assert not outbound.same_origin("http://h/v1", "https://h/v1") and not outbound.same_origin("", "")
    assert outbound.origin_text("https://u:sk-canary@other.example:8443/v1/x?sig=canary#f") == \
        "https://other.example:8443"
    assert outbound.origin_text("http://[::1]:80/") == "http://[::1]"


def test_userinfo_becomes_basic_auth_for_its_own_url_only():
    url, auth = outbound.split_userinfo("http://me:p%40ss@127.0.0.1:9/metrics")
    assert url == "http://127.0.0.1:9/metrics" and auth == {"Authorization": "Basic bWU6cEBzcw=="}
    assert outbound.split_userinfo("http://127.0.0.1:9/") == ("http://127.0.0.1:9/", {})


def test_the_sdk_client_never_follows_a_redirect_and_refuses_another_origin():
    import httpx2  # imported here: collecting this module patches and threads nothing

    client = outbound.sdk_http_client("http://127.0.0.1:8000/v1", timeout=1.0, verify=False,
                                      limits=httpx2.Limits(), request_hooks=[])
    assert client.follow_redirects is False
    hook = client.event_hooks["request"][0]
    hook(httpx2.Request("POST", "http://127.0.0.1:8000/v1/chat/completions"))  # the origin: fine
    with pytest.raises(outbound.CrossOriginRedirect) as info:
        hook(httpx2.Request("POST", "http://127.0.0.2:8000/v1/chat/completions?sig=x"))
    assert "to http://127.0.0.2:8000, another origin" in str(info.value) and "sig" not in str(info.value)
    client.close()


@pytest.mark.parametrize(("location", "kind_target", "detail"), [
    ("https://u:sk-canary@other.example/v1/x?sig=canary", "https://other.example",
     "the endpoint redirects to https://other.example: point --host at it"),
    ("//other.example:8080/v1", "http://other.example:8080",
     "the endpoint redirects to http://other.example:8080: point --host at it"),
    ("/v2/chat/completions", "the same origin", "the endpoint redirects to another path on the same host"),
    ("", "", "HTTP 307 without a Location header"),
])
def test_a_3xx_on_the_load_is_a_redirect_naming_the_targets_origin_only(location, kind_target, detail):
    exc = error_for_status(307, {"location": location} if location else {}, "<html>moved</html>",
                           "http://127.0.0.1:8000/v1")
    assert isinstance(exc, Redirect) and exc.kind == "redirect" and exc.status == 307
    assert exc.target == kind_target and exc.detail.startswith(detail)
    assert "canary" not in str(exc) + exc.detail and "sig" not in exc.detail
    assert "redirect" in contract.ERROR_KINDS


def test_a_redirect_before_any_success_stops_the_run_with_where_it_points():
    guard = RunGuard(base_url="http://127.0.0.1:8000/v1")
    result = StreamResult("r1", "chat", "fast", 0.0, status=307, exception=Redirect(307, "https://other.example"))
    line = guard.observe(result, 0.0)
    assert line == ("HTTP 307 from http://127.0.0.1:8000/v1: the endpoint redirects to https://other.example: point "
                    "--host at it")


def test_every_header_value_is_masked_whatever_its_name_and_the_key_too():
    assert knobs.masked_headers(["Ocp-Apim-Subscription-Key: c4n4ry", "X-Custom-Auth: Bearer c4n4ry",
                                 "X-Tenant: blue"]) == ["Ocp-Apim-Subscription-Key: ***", "X-Custom-Auth: ***",
                                                        "X-Tenant: ***"]
    parsed = SimpleNamespace(api_key="sk-c4n4ry", header=["X-Gw: c4n4ry-2"], api_key_header="",
                             extra_body='{"api_key": "c4n4ry-3", "max_tokens": 5, "meta": [{"access_token": "x"}]}')
    shown = json.dumps(knobs.redacted(parsed))
    assert "c4n4ry" not in shown and '"X-Gw: ***"' in shown
    body = json.loads(knobs.redacted(parsed)["extra_body"])
    assert body == {"api_key": "***", "max_tokens": 5, "meta": [{"access_token": "***"}]}
    assert knobs.redact("X-Gw refused c4n4ry-2 for sk-c4n4ry", knobs.secrets_of("sk-c4n4ry", {"X-Gw": "c4n4ry-2"})) \
        == "X-Gw refused *** for ***"


@pytest.mark.parametrize("name", ["api_key", "apiKey", "token", "access_token", "password", "client_secret",
                                  "x-api-key", "authToken", "signature", "private_key"])
def test_secret_looking_body_fields_are_masked(name):
    assert knobs.is_secret_field(name)


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens", "min_tokens", "top_k", "temperature",
                                  "keyword", "monkey", "stream_options"])
def test_ordinary_body_fields_are_kept(name):
    assert not knobs.is_secret_field(name)


def test_the_start_form_shows_header_names_only_and_binds_their_values_to_the_startup_host(caplog):
    from llmload.webui.secrets import Secrets

    secrets = Secrets(SimpleNamespace(host="http://127.0.0.1:8000"), "http://127.0.0.1:8000")
    context = {"template_args": {"extra_options": {"header": {"default_value": [
        "Authorization: Bearer sk-header", "X-Trace: c4n4ry"], "is_secret": False}}}}
    secrets.scrub(None, context=context)
    assert context["template_args"]["extra_options"]["header"]["default_value"] == \
        "Authorization: ***\nX-Trace: ***"
    client = swarm_app(secrets).test_client()
    sent_back = client.post("/swarm", data={"header": "Authorization: ***\nX-Trace: ***"}).get_json()["header"]
    assert sent_back.splitlines() == ["Authorization: Bearer sk-header", "X-Trace: c4n4ry"]
    typed = client.post("/swarm", data={"header": "X-Trace: mine"}).get_json()["header"]
    assert typed.splitlines() == ["X-Trace: mine", "Authorization: Bearer sk-header"]
    with caplog.at_level(logging.WARNING, logger="llmload"):
        other = client.post("/swarm", data={"host": "http://127.0.0.1:9999",
                                            "header": "Authorization: ***\nX-Trace: ***"}).get_json()["header"]
        left_out = client.post("/swarm", data={"host": "http://127.0.0.1:9999"}).get_json()["header"]
    assert other == "" and left_out == ""
    assert "the --header values" in caplog.text and "sk-header" not in caplog.text and "c4n4ry" not in caplog.text
    mine = client.post("/swarm", data={"host": "http://127.0.0.1:9999", "header": "Authorization: Bearer mine"})
    assert mine.get_json()["header"] == "Authorization: Bearer mine"


def test_the_start_form_masks_secret_body_fields_and_binds_them_to_the_startup_host(caplog):
    from llmload.webui.secrets import Secrets

    secrets = Secrets(SimpleNamespace(host="http://127.0.0.1:8000"), "http://127.0.0.1:8000")
    given = '{"temperature": 0, "api_token": "c4n4ry", "meta": {"password": "c4n4ry-2"}}'
    context = {"template_args": {"extra_options": {"extra_body": {"default_value": given, "is_secret": False}}}}
    secrets.scrub(None, context=context)
    shown = context["template_args"]["extra_options"]["extra_body"]["default_value"]
    assert json.loads(shown) == {"temperature": 0, "api_token": "***", "meta": {"password": "***"}}
    client = swarm_app(secrets).test_client()
    assert json.loads(client.post("/swarm", data={"extra_body": shown}).get_json()["extra_body"]) == json.loads(given)
    assert json.loads(client.post("/swarm", data={}).get_json()["extra_body"]) == json.loads(given)
    with caplog.at_level(logging.WARNING, logger="llmload"):
        other = client.post("/swarm", data={"host": "http://127.0.0.1:9", "extra_body": shown}).get_json()
    assert json.loads(other["extra_body"]) == {"temperature": 0, "meta": {}}
    assert "--extra-body secrets" in caplog.text and "c4n4ry" not in caplog.text
    assert client.post("/swarm", data={"extra_body": ""}).get_json()["extra_body"] == ""


def test_the_start_page_shows_the_host_without_its_userinfo_and_the_startup_host_gets_it_back():
    from llmload.webui.secrets import Secrets

    startup = "http://me:c4n4ry@127.0.0.1:8000/v1"
    secrets = Secrets(SimpleNamespace(host=startup), startup)
    context = {"template_args": {"host": startup, "users": {"Chat": {"host": startup, "weight": 1}},
                                 "extra_options": {}}}
    secrets.scrub(None, context=context)
    assert "c4n4ry" not in json.dumps(context)
    assert context["template_args"]["users"]["Chat"] == {"host": "http://127.0.0.1:8000/v1", "weight": 1}
    client = swarm_app(secrets).test_client()
    assert client.post("/swarm", data={"host": "http://127.0.0.1:8000/v1"}).get_json()["host"] == startup
    assert client.post("/swarm", data={"host": "http://127.0.0.1:9/v1"}).get_json()["host"] == "http://127.0.0.1:9/v1"
