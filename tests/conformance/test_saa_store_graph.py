"""Spring AI Alibaba's store-in-a-graph tests, translated, on every store backend.

Origin: spring-ai-alibaba-graph-core ``store/GraphStoreIntegrationTest.java`` (nodes read
and write the store given to ``CompileConfig.builder().store(store)``; Spring nodes call
``state.getStore()``, graphagent nodes take a ``store`` parameter or read
``config.store``) and ``LongTermMemoryTest`` (an agent keeps a user's facts in the store
across sessions; there a model is scripted, here a ``FunctionChatModel``).
"""

from __future__ import annotations

from typing import Any

from checkpoint.store import BaseStore
from graphagent.agent import MemoryRecallInterceptor, ReactAgent, memory_tools
from graphagent.graph import END, START, ReplaceStrategy, StateGraph
from graphagent.messages import AssistantMessage, SystemMessage, ToolCall
from graphagent.models import FunctionChatModel


def _chain(keys: list[str], *nodes: tuple[str, Any]) -> StateGraph:
    g = StateGraph({k: ReplaceStrategy() for k in keys})
    previous = START
    for name, fn in nodes:
        g.add_node(name, fn)
        g.add_edge(previous, name)
        previous = name
    g.add_edge(previous, END)
    return g


def _session_graph(store: BaseStore) -> Any:
    def authenticate(state: Any, *, store: BaseStore) -> dict[str, Any]:
        store.put(
            ("auth", "sessions"),
            state["userId"],
            {"userName": state["userName"], "status": "authenticated"},
        )
        return {"authenticated": True}

    def process(state: Any) -> dict[str, Any]:
        return {"requestProcessed": True}

    def save(state: Any, config: Any) -> dict[str, Any]:
        config.store.put(
            ("sessions", state["userId"]),
            "current",
            {"userName": state["userName"], "status": "active"},
        )
        return {"status": "session_complete", "storeType": type(config.store).__name__}

    keys = [
        "userId",
        "userName",
        "action",
        "status",
        "storeType",
        "authenticated",
        "requestProcessed",
    ]
    return _chain(
        keys, ("authenticate", authenticate), ("processRequest", process), ("saveSession", save)
    ).compile(store=store)


def test_user_session_workflow(lt_store: BaseStore) -> None:
    """GraphStoreIntegrationTest.testUserSessionWorkflowWith{Memory,FileSystem,Database}Store:
    a three-node session graph stores the session on each backend."""
    result = _session_graph(lt_store).invoke(
        {"userId": "u1", "action": "login", "userName": "Test User"}
    )
    assert result["status"] == "session_complete"
    assert result["storeType"] == type(lt_store).__name__
    item = lt_store.get(("sessions", "u1"), "current")
    assert item is not None and item.value["userName"] == "Test User"
    assert lt_store.get(("auth", "sessions"), "u1") is not None


def test_cross_session_persistence_workflow(lt_store: BaseStore) -> None:
    """GraphStoreIntegrationTest.testCrossSessionPersistenceWorkflow: one graph creates a
    profile and preferences, a second graph (another session) merges an update into them."""

    def create_profile(state: Any, *, store: BaseStore) -> dict[str, Any]:
        store.put(
            ("users", state["userId"]), "profile", {"name": state["userName"], "status": "active"}
        )
        return {}

    def set_preferences(state: Any, *, store: BaseStore) -> dict[str, Any]:
        prefs = {"language": state["preferredLanguage"], "theme": state["theme"]}
        store.put(("users", state["userId"]), "preferences", prefs)
        return {"status": "profile_created"}

    keys = [
        "userId",
        "userName",
        "preferredLanguage",
        "theme",
        "status",
        "notifications",
        "current",
    ]
    first = _chain(keys, ("createProfile", create_profile), ("setPreferences", set_preferences))
    out = first.compile(store=lt_store).invoke(
        {
            "userId": "user123",
            "userName": "Alice Smith",
            "preferredLanguage": "zh-CN",
            "theme": "dark",
        }
    )
    assert out["status"] == "profile_created"
    profile = lt_store.get(("users", "user123"), "profile")
    assert profile is not None and profile.value["name"] == "Alice Smith"

    def load(state: Any, *, store: BaseStore) -> dict[str, Any]:
        found = store.get(("users", state["userId"]), "preferences")
        return {"current": found.value if found else {}}

    def update(state: Any, *, store: BaseStore) -> dict[str, Any]:
        merged = {
            **state["current"],
            "theme": state["theme"],
            "notifications": state["notifications"],
        }
        store.put(("users", state["userId"]), "preferences", merged)
        return {"status": "preferences_updated"}

    second = _chain(keys, ("loadExistingPrefs", load), ("updatePrefs", update)).compile(
        store=lt_store
    )
    out = second.invoke({"userId": "user123", "theme": "light", "notifications": True})
    assert out["status"] == "preferences_updated"
    prefs = lt_store.get(("users", "user123"), "preferences")
    assert prefs is not None
    assert prefs.value == {"language": "zh-CN", "theme": "light", "notifications": True}


def test_multi_step_data_processing_with_store(lt_store: BaseStore) -> None:
    """GraphStoreIntegrationTest.testMultiStepDataProcessingWithStore: each step saves its
    result, and the results chain."""

    def raw(state: Any, *, store: BaseStore) -> dict[str, Any]:
        store.put(("tasks", state["taskId"]), "raw_data", {"data": state["data"]})
        return {}

    def process(state: Any, *, store: BaseStore) -> dict[str, Any]:
        processed = "processed: " + state["data"]
        store.put(("tasks", state["taskId"]), "processed_data", {"data": processed})
        return {"processedData": processed}

    def result(state: Any, *, store: BaseStore) -> dict[str, Any]:
        final = "result for: " + state["processedData"]
        store.put(("tasks", state["taskId"]), "final_result", {"result": final})
        return {"status": "processing_complete"}

    keys = ["taskId", "data", "status", "processedData"]
    g = _chain(keys, ("storeRawData", raw), ("processData", process), ("generateResult", result))
    assert (
        g.compile(store=lt_store).invoke({"taskId": "task456", "data": "raw input data"})["status"]
        == "processing_complete"
    )
    ns = ("tasks", "task456")
    assert lt_store.get(ns, "raw_data").value == {"data": "raw input data"}  # type: ignore[union-attr]
    assert lt_store.get(ns, "processed_data").value == {"data": "processed: raw input data"}  # type: ignore[union-attr]
    assert lt_store.get(ns, "final_result").value == {
        "result": "result for: processed: raw input data"
    }  # type: ignore[union-attr]


def test_store_search_in_graph_workflow(lt_store: BaseStore) -> None:
    """GraphStoreIntegrationTest.testStoreSearchInGraphWorkflow: a node searches the store
    by text and hands the items on."""
    lt_store.put(("users", "u1"), "ui", {"theme": "dark", "language": "en"})
    lt_store.put(("users", "u2"), "ui", {"theme": "light"})
    lt_store.put(("users", "u3"), "profile", {"name": "no match"})

    def search(state: Any, *, store: BaseStore) -> dict[str, Any]:
        return {
            "searchResults": [i.value for i in store.search((), query=state["query"], limit=10)]
        }

    g = _chain(["query", "searchResults"], ("searchData", search))
    found = g.compile(store=lt_store).invoke({"query": "theme"})["searchResults"]
    assert found and all("theme" in value for value in found) and len(found) == 2


def test_long_term_memory_across_sessions(lt_store: BaseStore) -> None:
    """LongTermMemoryTest: a user's preference saved in one session is used in the next,
    on a different thread, and stays that user's."""

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        last = messages[-1]
        if last.role == "user" and "remember" in last.text:
            fact = last.text.split(":", 1)[1].strip()
            return AssistantMessage(
                tool_calls=(ToolCall(id="r", name="remember", arguments=f'{{"fact": "{fact}"}}'),)
            )
        if last.role == "tool":
            return AssistantMessage("noted")
        notes = [
            m.text for m in messages if isinstance(m, SystemMessage) and "remember about" in m.text
        ]
        return AssistantMessage(notes[0].splitlines()[1] if notes else "unknown")

    agent = ReactAgent(
        model=FunctionChatModel(script),
        tools=memory_tools(("profiles", "{user_id}")),
        interceptors=[MemoryRecallInterceptor(("profiles", "{user_id}"))],
        store=lt_store,
    )
    assert (
        agent.call("please remember: likes dark mode", config={"metadata": {"user_id": "u1"}}).text
        == "noted"
    )
    assert (
        agent.call("which mode?", config={"metadata": {"user_id": "u1"}}).text
        == "- likes dark mode"
    )
    assert agent.call("which mode?", config={"metadata": {"user_id": "u2"}}).text == "unknown"
