"""verl custom reward function that scores with `grpo serve-rewards` (the TypeScript rewards).

Standard library only (urllib.request, json). Point verl at it:

    custom_reward_function.path=/path/to/verl_compute_score.py
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.url=http://127.0.0.1:8000/get_reward   # optional

and start the server first: `grpo serve-rewards --reward math-answer --port 8000`.

compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) sends one
OpenRLHF-format request: query = [solution_str], prompts = [""], labels = [the label], where the
label is ground_truth, or, when extra_info is a dict, the columns {**extra_info, "answer":
ground_truth} (so rewards that read other dataset columns, such as code tests, get them).

Returns the combined reward as a float (verl's plain form). With per_reward=True it returns
verl's dict form instead: {"score": reward, "reward/<name>": score, ...}, each reward's own score
(NaN where that reward did not apply), which verl logs beside the score.

A failed reward raises RuntimeError naming the reward and its message (never a silent 0), as does
an unreachable server after `attempts` tries; verl then stops with that error.
This file is not: a reward (those live in TypeScript) nor a server.
"""

import json
import os
import time
import urllib.error
import urllib.request

DEFAULT_URL = os.environ.get("GRPO_REWARD_URL", "http://127.0.0.1:8000/get_reward")


def _post(url, payload, timeout, attempts):
    data = json.dumps(payload, default=str).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            # The server answered: a malformed request or a failure is not retried.
            detail = error.read().decode("utf-8", "replace")
            raise RuntimeError(f"grpo serve-rewards at {url} answered HTTP {error.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            if attempt + 1 >= attempts:
                raise RuntimeError(f"grpo serve-rewards at {url} unreachable after {attempts} tries: {error}") from None
            time.sleep(2**attempt)
    raise AssertionError("unreachable")


def compute_score(
    data_source,
    solution_str,
    ground_truth,
    extra_info=None,
    url=DEFAULT_URL,
    timeout=60.0,
    attempts=3,
    per_reward=False,
    **kwargs,
):
    """verl's compute_score: the served rewards' combined score of one response."""
    label = ground_truth
    if isinstance(extra_info, dict):
        label = {**extra_info, "answer": ground_truth}
    body = _post(url, {"query": [solution_str], "prompts": [""], "labels": [label]}, timeout, attempts)
    reward = body["rewards"][0]
    if reward is None:
        reasons = "; ".join(f"{e['reward']} {e['status']}: {e['message']}" for e in body.get("errors", []))
        raise RuntimeError(f"reward failed for data_source {data_source!r}: {reasons}")
    if not per_reward:
        return float(reward)
    return {"score": float(reward), **{name: float(values[0]) for name, values in body["extra_logs"].items()}}
