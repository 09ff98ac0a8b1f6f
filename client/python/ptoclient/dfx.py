# SPDX-License-Identifier: Apache-2.0
"""DFX artefacts: what a dispatch with enable_swimlane, enable_scope_stats or
enable_dep_gen gets back (docs/protocol.md "dfx").

A successful dispatch's result has them in ``result["dfx"]``; a failed one
(a HEAP_RING_DEADLOCK, say) in the error's ``dfx`` attribute, since what the
run recorded until it failed is what explains the failure.  Each artefact is
bytes: ``swimlane`` (Chrome trace-event JSON for Perfetto or
chrome://tracing), ``scope_stats`` (JSON lines), ``dep_graph`` (Graphviz DOT);
``refused`` (str) says why the daemon sent none.
"""
import os

FILES = (("swimlane", "swimlane.json"), ("scope_stats", "scope_stats.jsonl"),
         ("dep_graph", "dep_graph.dot"))


class DfxRefused(Exception):
    """The daemon ran the dispatch but sent no artefacts (too large for its
    output budget, or too many tasks to record); str() says which."""


def save_dfx(dfx, directory):
    """Write the artefacts of ``dfx`` (a result's or an error's map) as
    DIRECTORY/swimlane.json, scope_stats.jsonl and dep_graph.dot (those
    present), creating DIRECTORY.  Returns the paths written.  Raises
    DfxRefused when the daemon refused, ValueError when dfx is empty."""
    if not dfx:
        raise ValueError("no DFX artefacts: the dispatch set no enable_* flag, or the daemon "
                         "predates protocol 1.1")
    if dfx.get("refused"):
        raise DfxRefused(dfx["refused"])
    os.makedirs(directory, exist_ok=True)
    written = []
    for key, name in FILES:
        data = dfx.get(key)
        if data is None:
            continue
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        written.append(path)
    return written
