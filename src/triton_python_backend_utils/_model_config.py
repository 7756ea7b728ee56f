"""``pb_utils.ModelConfig``: what ``auto_complete_config`` receives and returns.

It wraps the config JSON (Triton's rendering) and changes it only in the
ways Triton allows; conflicting changes raise ``ValueError`` so that the
model load fails with a message naming the model.
"""

from __future__ import annotations

import json
from typing import Any


class ModelConfig:
    def __init__(self, model_config: str | dict[str, Any]) -> None:
        self._model_config: dict[str, Any] = (
            json.loads(model_config) if isinstance(model_config, str) else model_config
        )

    def as_dict(self) -> dict[str, Any]:
        return self._model_config

    @property
    def _name(self) -> str:
        return str(self._model_config.get("name", ""))

    def set_max_batch_size(self, max_batch_size: int) -> None:
        current = int(self._model_config.get("max_batch_size", 0) or 0)
        if current != 0 and current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in auto-complete-config "
                f"function for model '{self._name}' specified max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{other}', but "
                    f"auto-complete-config function for model '{self._name}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input: dict[str, Any]) -> None:
        self._add("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output: dict[str, Any]) -> None:
        self._add("output", output, ("name", "data_type", "dims"))

    def set_model_transaction_policy(self, transaction_policy_dict: dict[str, Any]) -> None:
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(
                    f"model transaction property in auto-complete-config function for model "
                    f"'{self._name}' contains property other than 'decoupled'"
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = bool(transaction_policy_dict["decoupled"])
            if "decoupled" in policy and bool(policy["decoupled"]) != wanted:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name}', which is already set to {policy['decoupled']}"
                )
            policy["decoupled"] = wanted

    def _add(self, kind: str, tensor: dict[str, Any], allowed: tuple[str, ...]) -> None:
        name = self._name
        for key in tensor:
            if key not in allowed:
                quoted = ", ".join(f"'{a}'" for a in allowed[:-1]) + f" and '{allowed[-1]}'"
                raise ValueError(
                    f"{kind} '{tensor.get('name', '')}' in auto-complete-config function for "
                    f"model '{name}' contains property other than {quoted}."
                )
        if "name" not in tensor:
            raise ValueError(
                f"{kind} in auto-complete-config function for model '{name}' is missing 'name' "
                "property."
            )
        for key in ("data_type", "dims"):
            if key not in tensor:
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{name}' is missing '{key}' property."
                )
        entries = self._model_config.setdefault(kind, [])
        for existing in entries:
            if existing.get("name") != tensor["name"]:
                continue
            old_type = existing.get("data_type", "TYPE_INVALID")
            if old_type not in ("TYPE_INVALID", tensor["data_type"]):
                raise ValueError(
                    f"unable to load model '{name}', configuration expects datatype {old_type} "
                    f"for {kind} '{tensor['name']}', model provides {tensor['data_type']}"
                )
            old_dims = list(existing.get("dims", []))
            if old_dims and old_dims != list(tensor["dims"]):
                raise ValueError(
                    f"unable to load model '{name}', configuration expects dims {old_dims} for "
                    f"{kind} '{tensor['name']}', model provides dims {list(tensor['dims'])}"
                )
            if (
                "optional" in tensor
                and "optional" in existing
                and bool(existing["optional"]) != bool(tensor["optional"])
            ):
                raise ValueError(
                    f"unable to load model '{name}', configuration expects optional "
                    f"{existing['optional']} for {kind} '{tensor['name']}', model provides "
                    f"{tensor['optional']}"
                )
            existing.update(tensor)
            return
        entries.append(dict(tensor))
