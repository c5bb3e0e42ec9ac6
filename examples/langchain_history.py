"""A LangChain chat whose history fits whichever model runs it (offline, fake models).

A ``RunnableWithMessageHistory`` chain talks to a configurable chat model: a large one by
default, a small one when the call's config says ``"model": "small"``. The same configurable
field tells the history which model to fit to, so:

- on the large model the whole conversation goes over, untouched;
- on the small one the history is compressed to fit its window (system prompt, a summary of the
  cut part, relevant older turns, the newest turns);
- back on the large model everything comes back: the full log never left the store.

Run it with ``python examples/langchain_history.py``. The models are LangChain's
``GenericFakeChatModel`` with a ``profile`` (the window facts a real model carries), so nothing
goes over the network.
"""

from __future__ import annotations

import itertools
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField
from langchain_core.runnables.history import RunnableWithMessageHistory
from pydantic import Field

from langchain_session_migrator import FittedHistoryFactory, messages_to_core, window_for
from session_migrator import Budget, counter_for


class FakeChatModel(GenericFakeChatModel):
    """A fake chat model with a name, that remembers what it was last sent."""

    model_name: str
    last_sent: list[BaseMessage] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.last_sent = list(messages)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def replies(name: str) -> Iterator[str]:
    for n in itertools.count(1):
        yield (
            f"({name}) Answer {n}: revenue came in 3% over plan, churn was flat at 2.1%, and "
            "two hires slipped to next quarter, so the forecast moved up slightly overall."
        )


def main() -> None:
    big = FakeChatModel(
        model_name="gpt-4o",
        messages=replies("gpt-4o"),
        profile={"max_input_tokens": 128_000, "max_output_tokens": 16_384},
    )
    small = FakeChatModel(  # a deliberately tiny window, so the fit is easy to see
        model_name="gpt-4o-mini",
        messages=replies("gpt-4o-mini"),
        profile={"max_input_tokens": 900, "max_output_tokens": 200},
    )
    llm = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are the finance team's assistant."),
            MessagesPlaceholder("history"),
            ("human", "{input}"),
        ]
    )

    with tempfile.TemporaryDirectory() as folder:
        store = f"sqlite:///{Path(folder) / 'chat.db'}"
        # --- the adoption: a factory, its config specs, its watcher ---------------------------
        history = FittedHistoryFactory(store=store, llm=llm)
        with warnings.catch_warnings():
            # upstream deprecated RunnableWithMessageHistory in langchain-core 1.x (removal in
            # 2.0); see the agent example for the middleware that replaces it
            warnings.filterwarnings("ignore", message="RunnableWithMessageHistory is deprecated")
            chain = RunnableWithMessageHistory(
                prompt | llm,
                history,
                input_messages_key="input",
                history_messages_key="history",
                history_factory_config=history.config_specs,
            ).with_config(callbacks=[history.watcher])
        # ---------------------------------------------------------------------------------------

        plan = ["big"] * 14 + ["small"] * 3 + ["big"]
        print(f"store: {store}\n")
        print(f"{'turn':>4}  {'model':<12} {'sent':>5} {'tokens':>7} {'budget':>7}  decision")
        for turn, key in enumerate(plan, 1):
            question = f"Turn {turn}: how did region {turn} do against the forecast this quarter?"
            config: Any = {"configurable": {"session_id": "cfo-weekly", "model": key}}
            chain.invoke({"input": question}, config)
            model = big if key == "big" else small
            window = window_for(model)
            counter = counter_for(window.tokenizer, model=window.name)
            tokens = counter.count_messages(messages_to_core(model.last_sent))
            budget = Budget.for_window(window, exact=counter.exact).tokens
            report = history("cfo-weekly", key).last_report
            decision = report.decision if report else "-"
            print(
                f"{turn:>4}  {window.name:<12} {len(model.last_sent):>5} {tokens:>7} "
                f"{budget:>7}  {decision}"
            )

            if key == "small" and turn == plan.index("small") + 1:
                seen = [f"{m.type}: {' '.join(m.text.split())[:90]}" for m in model.last_sent]
                shown = "\n       ".join([*seen[:3], "...", *seen[-2:]])
                print(f"       what {window.name} was sent:\n       {shown}")

        log = history("cfo-weekly", "big").full_messages
        print(f"\nfull log in the store: {len(log)} messages (nothing was lost)")
        print("migrations logged:")
        for record in history.store.migrations("cfo-weekly"):
            print(
                f"  {record.from_model or '(new)'} -> {record.to_model}: "
                f"{record.tokens_before} tokens, {record.decision}, {record.strategy}"
            )
        history.close()


if __name__ == "__main__":
    main()
