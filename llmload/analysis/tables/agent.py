"""Agent sessions (scenarios/agent.py): turns per session, session time, TTFT and the cached share per turn.

How it works: the rows with a `session` are agent turns (`turn` 1..N; `parent_session` names the session a
sub-agent session was fanned out of). A session is one unit whichever phase its turns fell in, so every such row
of the run counts (warm-up included): a session cut by the end of a tier would otherwise look shorter than it
was. Per session: turns (distinct turn numbers sent) and total time, from its first turn's send to its last
turn's end (`elapsed_ms`, else `e2e_ms`: think time between turns included). Per (kind, turn number), over the
successful turns: requests, TTFT p50/p95, input and cached tokens p50, and the cached share (cached tokens over
input tokens, summed over the turns whose server reported `cached_tokens`; NaN when none did). Kind is
`session` for root sessions, `sub-agent` for the sessions fanned out of them (their turn 1 opens with the
root's first prompt, so a prefix cache serves it). Pure: the samples frame in, frames out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

KINDS = ("session", "sub-agent")
TURN_COLUMNS = ["kind", "turn", "requests", "ttft_p50_ms", "ttft_p95_ms", "input_tokens_p50", "cached_tokens_p50",
                "cached_share"]


@dataclass(frozen=True)
class AgentView:
    sessions: int
    """root sessions"""
    sub_sessions: int
    """sub-agent sessions fanned out of them"""
    turns_p50: float
    turns_max: int
    session_s_p50: float
    session_s_p95: float
    per_turn: pd.DataFrame
    """TURN_COLUMNS, one row per (kind, turn)"""

    @property
    def sentence(self) -> str:
        subs = f" and {_count(self.sub_sessions, 'sub-agent session')} fanned out" if self.sub_sessions else ""
        return (f"{_count(self.sessions, 'agent session')}{subs}: {self.turns_p50:g} turns per session p50, "
                f"sub-agents' included (at most {self.turns_max}); a session took {self.session_s_p50:.2f} s p50, "
                f"{self.session_s_p95:.2f} s p95, from its first send to its last turn's end, think time included.")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series("", index=frame.index)
    return frame[column].astype(str).replace("nan", "")


def _num(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(float("nan"), index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce")


def _ok(frame: pd.DataFrame) -> pd.Series:
    if "ok" in frame:
        return frame["ok"].astype(bool)
    return _text(frame, "error") == ""


def per_turn(frame: pd.DataFrame) -> pd.DataFrame:
    """TURN_COLUMNS over the successful agent turns of `frame` (rows with `kind` and `turn`)."""
    ok = frame[_ok(frame)]
    if ok.empty:
        return pd.DataFrame(columns=TURN_COLUMNS)
    keys = [ok["kind"], ok["turn"]]
    ttft, inp, cached = _num(ok, "ttft_ms"), _num(ok, "input_tokens"), _num(ok, "cached_tokens")
    reported = cached.notna() & inp.notna()
    table = pd.DataFrame({
        "requests": ok.groupby(keys).size(), "ttft_p50_ms": ttft.groupby(keys).median(),
        "ttft_p95_ms": ttft.groupby(keys).quantile(0.95), "input_tokens_p50": inp.groupby(keys).median(),
        "cached_tokens_p50": cached.groupby(keys).median(),
        "cached_share": cached.where(reported).groupby(keys).sum(min_count=1)
        / inp.where(reported).groupby(keys).sum(min_count=1),
    }).reset_index()
    table["kind"] = pd.Categorical(table["kind"], KINDS, ordered=True)
    return table.sort_values(["kind", "turn"]).reset_index(drop=True)[TURN_COLUMNS].assign(
        kind=lambda t: t["kind"].astype(str))


def agent_view(samples: pd.DataFrame) -> AgentView | None:
    """The agent sessions of a run (every row with a `session`); None when it has none."""
    session = _text(samples, "session")
    frame = samples[session != ""]
    turn = _num(frame, "turn")
    frame = frame[turn.notna()]
    if frame.empty:
        return None
    sid = _text(frame, "session")
    frame = frame.assign(session=sid, turn=_num(frame, "turn").astype(int),
                         kind=(_text(frame, "parent_session") != "").map({False: KINDS[0], True: KINDS[1]}))
    start = _num(frame, "ts_start_s")
    spent_ms = _num(frame, "elapsed_ms").fillna(_num(frame, "e2e_ms")).fillna(0.0)
    by = frame.groupby("session")
    seconds = ((start + spent_ms / 1000.0).groupby(frame["session"]).max() - start.groupby(frame["session"]).min())
    turns = by["turn"].nunique()
    kinds = by["kind"].first()
    return AgentView(
        sessions=int((kinds == KINDS[0]).sum()), sub_sessions=int((kinds == KINDS[1]).sum()),
        turns_p50=float(turns.median()), turns_max=int(turns.max()),
        session_s_p50=float(seconds.median()), session_s_p95=float(seconds.quantile(0.95)),
        per_turn=per_turn(frame),
    )


def summary_section(view: AgentView | None) -> dict | None:
    """summary.json's `workload.agent` (None without agent sessions; `summary.clean` makes NaN null)."""
    if view is None:
        return None
    return {"sentence": view.sentence, "sessions": view.sessions, "sub_sessions": view.sub_sessions,
            "turns_p50": view.turns_p50, "turns_max": view.turns_max, "session_s_p50": view.session_s_p50,
            "session_s_p95": view.session_s_p95,
            "turns": [{str(k): v for k, v in row.items()} for row in view.per_turn.to_dict(orient="records")]}
