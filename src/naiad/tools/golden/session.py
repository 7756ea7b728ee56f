"""Send the cases: one in-process server over the repository, one client per protocol.

``embedded`` calls the data plane as the frontends do (no sockets); ``http`` and
``grpc`` open that same server's frontends on free loopback ports and send the
same requests with ``tritonclient``, the runner's network clients.  Every
protocol answers in the same shape (:class:`~naiad.runner.result.InferResult`,
errors as NaiadErrors), so a case is judged the same way whichever carried it.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from naiad.core.errors import NaiadError, Unavailable
from naiad.options.declarations import ServerOptions
from naiad.runner.client import Call, Client, RequestOptions
from naiad.runner.embedded import EmbeddedClient
from naiad.runner.result import InferResult
from naiad.runner.signature import Signature
from naiad.tools.golden import cases, compare
from naiad.tools.golden.cases import Case, CaseError, Entry

PROTOCOLS = ("embedded", "http", "grpc")


@dataclass
class Outcome:
    """How one case went over one protocol."""

    model: str
    #: The case file as reports name it (``<model>/tests/<file>``), or the model's
    #: name for a model without cases that failed to load.
    name: str
    protocol: str
    case: Case | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: What the requests answered (a list of responses per request for a decoupled model).
    answers: list[Any] = field(default_factory=list)
    #: Passed with nothing to compare: the case holds inputs only.
    unchecked: bool = False
    #: The case's expected outputs were written from this run's answers (--record).
    recorded: bool = False

    @property
    def passed(self) -> bool:
        return not self.problems


class Session:
    """The server and its clients, for one run of ``naiad test``."""

    def __init__(self, repository: Path, protocols: Sequence[str], timeout: float) -> None:
        self.repository = repository
        self.protocols = list(protocols)
        self.timeout = timeout
        network = {p: 0 if p in protocols else -1 for p in ("http", "grpc")}
        self.options = ServerOptions(
            model_repositories=(repository,),
            http_port=network["http"],
            grpc_port=network["grpc"],
            metrics_port=-1,
            http_address="127.0.0.1",
            grpc_address="127.0.0.1",
            exit_on_error=False,
            allow_dashboard=False,
            log_info=False,
        )
        self.embedded = EmbeddedClient(self.options)
        self.clients: dict[str, Client] = {}
        self.signatures: dict[tuple[str, str], Signature] = {}
        self.sequence_models: set[tuple[str, str]] = set()
        #: Correlation ids of the sequences sent, never reused within a run.
        self._sequence_ids = itertools.count(1)

    async def start(self, connect: bool = True) -> None:
        """Load the repository and, with ``connect``, connect a client per protocol now
        rather than at its first case (a model that fails to load does not stop the
        others: its cases fail with its reason)."""
        await self.embedded.start()
        self.clients["embedded"] = self.embedded
        if connect:
            for protocol in self.protocols:
                await self.client(protocol)

    async def client(self, protocol: str) -> Client:
        """The protocol's client, connected on first use."""
        if protocol not in self.clients:
            try:
                importlib.import_module(f"tritonclient.{protocol}")
            except ImportError as exc:
                raise Unavailable(
                    f"sending cases over {protocol} needs tritonclient ({exc}): "
                    "pip install 'naiad[client]'"
                ) from None
            from naiad.runner.remote import RemoteClient

            port = getattr(self.embedded.server, f"{protocol}_port")
            client = RemoteClient(protocol, f"127.0.0.1:{port}")
            await client.start()
            self.clients[protocol] = client
        return self.clients[protocol]

    async def close(self) -> None:
        clients, self.clients = self.clients, {}
        for protocol, client in clients.items():
            if protocol != "embedded":
                await client.close()
        await self.embedded.close()

    def load_failures(self) -> dict[str, str]:
        """Why each model that failed to load did (a version's reason names the version)."""
        failures: dict[str, str] = {}
        for name, reason in self.embedded.dp.failed_models():
            model, _, version = name.partition(" version ")
            text = f"version {version}: {reason}" if version else reason
            failures[model] = f"{failures[model]}; {text}" if model in failures else text
        return failures

    async def signature(self, model: str, version: str) -> Signature:
        key = (model, version)
        if key not in self.signatures:
            metadata = await self.embedded.get_model_metadata(model, version)
            config = await self.embedded.get_model_config(model, version)
            self.signatures[key] = Signature.from_documents(metadata, config)
            if config.get("sequence_batching") is not None:
                self.sequence_models.add(key)
        return self.signatures[key]

    # -- one case ------------------------------------------------------------------------

    async def run(self, case: Case, protocol: str) -> Outcome:
        outcome = Outcome(case.model, case.name, protocol, case)
        started = time.monotonic()
        try:
            await self._run(case, protocol, outcome)
        except CaseError as exc:
            outcome.problems.append(str(exc))
        except NaiadError as exc:
            outcome.problems.append(f"{exc.kind.name}: {exc.message}")
        outcome.seconds = time.monotonic() - started
        return outcome

    async def _run(self, case: Case, protocol: str, outcome: Outcome) -> None:
        failure = self.load_failures().get(case.model)
        if failure is not None:
            outcome.problems.append(f"model '{case.model}' failed to load: {failure}")
            return
        signature = await self.signature(case.model, case.version)
        if case.streamed and (case.model, case.version) not in self.sequence_models:
            raise CaseError(f"streams of requests are sequences, and model '{case.model}' "
                            "has no sequence_batching")  # fmt: skip
        client = await self.client(protocol)
        sequence_ids: dict[int, int] = {}
        for entry in case.entries():
            options = RequestOptions(parameters=dict(case.parameters))
            if entry.stream is not None:
                if entry.stream not in sequence_ids:
                    sequence_ids[entry.stream] = next(self._sequence_ids)
                options.sequence_id = sequence_ids[entry.stream]
                options.sequence_start, options.sequence_end = entry.start, entry.end
            inputs = cases.inputs(entry, case.model, signature)
            call = Call(signature, case.version, inputs, options)
            answer, error = await self._send(client, call, signature.decoupled)
            outcome.answers.append(answer)
            where = entry.where
            if case.error is not None:
                outcome.problems.extend(compare.error(error, case.error, protocol, where))
            elif error is not None:
                outcome.problems.append(f"{where}: failed with {error.kind.name}: {error.message}")
            elif entry.expected is None:
                outcome.unchecked = True
            else:
                outcome.problems.extend(_judge(answer, entry, case, signature))

    async def _send(
        self, client: Client, call: Call, decoupled: bool
    ) -> tuple[Any, NaiadError | None]:
        async def answer() -> Any:
            if decoupled:
                return [result async for result in client.stream(call)]
            return await client.infer(call)

        try:
            return await asyncio.wait_for(answer(), self.timeout), None
        except NaiadError as exc:
            return None, exc
        except asyncio.TimeoutError:
            return None, Unavailable(f"no answer within {self.timeout:g}s (--timeout)")


def _judge(answer: Any, entry: Entry, case: Case, signature: Signature) -> list[str]:
    where, expected = entry.where, entry.expected
    batched = signature.max_batch_size > 0
    if not signature.decoupled:
        if isinstance(expected, list):
            raise CaseError(f"{where}: its validation_data is a list of responses, but "
                            f"model '{case.model}' is not decoupled")  # fmt: skip
        return compare.response(answer, expected, case.tolerance, where, batched)
    if not isinstance(expected, list):
        raise CaseError(f"model '{case.model}' is decoupled: each "
                        "validation_data item is a list of its responses' outputs")  # fmt: skip
    responses: list[InferResult] = answer
    if len(responses) != len(expected):
        return [f"{where}: {len(responses)} responses, expected {len(expected)}"]
    problems = []
    for n, (got, want) in enumerate(zip(responses, expected, strict=True)):
        problems.extend(
            compare.response(got, want, case.tolerance, f"{where} response {n}", batched)
        )
    return problems
