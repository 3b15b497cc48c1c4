"""The cluster connection: the one module of kubegap that imports the `kubernetes` client.

Replies are read as raw JSON (`_preload_content`-style, never the client's typed models): models are several
times slower and drop fields of custom resources they do not know. The client's own retries are switched
off so that every retry is decided, counted and reported by kubegap.audit.retry.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from kubegap import __version__
from kubegap.audit.transport import Query, Reply, TransportError
from kubegap.errors import UsageError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read (seconds)
# Names kubegap in the API server's audit log (the client's default names only the library).
USER_AGENT = f"kubegap/{__version__}"


class KubeTransport:
    """A Transport over the official client's ApiClient (auth, TLS and proxies as its configuration says)."""

    def __init__(self, api: client.ApiClient, timeout: tuple[float, float] = DEFAULT_TIMEOUT) -> None:
        self.api = api
        self.timeout = timeout

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    def request(
        self, method: str, path: str, query: Query = (), body: Mapping[str, Any] | None = None
    ) -> Reply:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        params = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query) or None,
            header_params=headers,
            body=dict(body) if body is not None else None,
            auth_settings=["BearerToken"],
        )
        try:
            response = self.api.call_api(*params, _request_timeout=self.timeout)
            data = response.read()  # type: ignore[no-untyped-call]  # the client leaves it untyped
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        except client.ApiException as exc:  # TLS failures surface as status-0 ApiExceptions
            raise TransportError(f"{method} {path}: {exc.reason}") from exc
        return Reply(int(response.status), dict(response.headers or {}), bytes(data or b""))

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]


def connect(
    kubeconfig: str | None, context: str | None, timeout: tuple[float, float] = DEFAULT_TIMEOUT
) -> KubeTransport:
    """Kubeconfig (--kubeconfig, else KUBECONFIG, else ~/.kube/config) or, failing those, in-cluster."""
    configuration = client.Configuration()
    try:
        if kubeconfig is None and context is None and _in_cluster() and not _kubeconfig_present():
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, OSError, ValueError, TypeError, yaml.YAMLError) as exc:
        raise UsageError(_explain(kubeconfig, context, exc)) from exc
    configuration.retries = False  # retries are decided by kubegap.audit.retry, not urllib3
    log.debug("connecting to %s", configuration.host)
    api = client.ApiClient(configuration)
    api.user_agent = USER_AGENT
    return KubeTransport(api, timeout)


def identity(kubeconfig: str | None, context: str | None) -> tuple[str | None, str | None]:
    """(context name, kubeconfig user name) that `connect` uses; in-cluster: (None, the service account)."""
    if kubeconfig is None and context is None and _in_cluster() and not _kubeconfig_present():
        return None, "in-cluster service account"
    try:
        contexts, active = config.list_kube_config_contexts(kubeconfig)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        raise UsageError(f"cannot load cluster credentials: {exc}") from exc
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    if not chosen:
        return context, None
    return chosen.get("name"), (chosen.get("context") or {}).get("user")


def _kubeconfig_files(kubeconfig: str | None) -> list[str]:
    if kubeconfig is not None:
        return [kubeconfig]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [str(Path("~/.kube/config").expanduser())]


def _explain(kubeconfig: str | None, context: str | None, exc: Exception) -> str:
    """The client's message names neither the file nor what was asked for: say both."""
    names = _kubeconfig_files(kubeconfig)
    where = f"kubeconfig {' and '.join(names)}"
    existing = [n for n in names if Path(n).is_file()]
    if not existing:
        return f"{where}: no such file (give one with --kubeconfig, or set KUBECONFIG)"
    contexts: list[str] = []
    for name in existing:
        with contextlib.suppress(OSError, yaml.YAMLError):
            doc = yaml.safe_load(Path(name).read_text("utf-8"))
            entries = doc.get("contexts") if isinstance(doc, Mapping) else None
            contexts += [str(c.get("name")) for c in entries or () if isinstance(c, Mapping)]
    if context is not None and context not in contexts:
        known = ", ".join(contexts) or "none"
        return f"{where} has no context {context!r} (contexts: {known}); check --context"
    if isinstance(exc, yaml.YAMLError):
        return f"{where} is not valid YAML: {str(exc).splitlines()[0]}"
    return f"{where}: cannot load cluster credentials: {exc}"


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _kubeconfig_present() -> bool:
    paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return any(p.exists() for p in [*paths, Path("~/.kube/config").expanduser()])
