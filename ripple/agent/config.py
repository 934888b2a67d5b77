"""The agent layer's settings: one frozen pydantic model, validated where a session is opened."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["AgentConfig"]


class AgentConfig(BaseModel):
    """Budgets, caps and thresholds of a session.

    The budget is ``context_window * budget_ratio`` tokens (the seed design:
    half of the model's window for memory and history, the rest for the
    system prompt, tools and the answer).  Each always-present section gets a
    hard share of it; the recent-turns window gets what is left, so a context
    never exceeds the budget whatever the sections hold.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    context_window: int = Field(32_000, ge=512, description="the model's context window, in tokens")
    budget_ratio: float = Field(0.5, gt=0, le=1, description="share of the window for what context() returns")
    pins_share: float = Field(0.10, ge=0, le=0.5)
    profile_share: float = Field(0.08, ge=0, le=0.5)
    working_share: float = Field(0.08, ge=0, le=0.5)
    summary_share: float = Field(0.12, ge=0, le=0.5)
    recalled_share: float = Field(0.12, ge=0, le=0.5)
    low_water: float = Field(0.75, gt=0.1, le=1, description="eviction empties the window down to this share")
    max_pins: int = Field(20, ge=0, description="pinned facts per user, at most")
    max_cards: int = Field(8, ge=0, le=32, description="recalled memory cards in a context, at most")
    card_chars: int = Field(100, ge=20, description="characters of one card's text, at most")
    recall_k: int = Field(16, ge=1, le=200, description="hits recalled per scope before the relevance floor")
    patrol_on_add: bool = Field(False, description="run the patrol on every user turn added")
    alert_threshold: float = Field(0.8, ge=0, le=1, description="patrol alerts at or above this score are shown")
    log_threshold: float = Field(0.6, ge=0, le=1, description="between this and alert_threshold: logged, not shown")
    cooldown_turns: int = Field(20, ge=0, description="turns before an alert with the same dedupe key shows again")
    repeat_window_days: float = Field(7.0, gt=0, description="how far back a question counts as asked before")
    repeat_min_count: int = Field(3, ge=1, description="earlier askings that make a question a repeat")

    @model_validator(mode="after")
    def _shares(self) -> "AgentConfig":
        if self.window_share < 0.2:
            raise ValueError("the section shares leave less than 20% of the budget for the recent turns")
        return self

    @property
    def budget(self) -> int:
        return int(self.context_window * self.budget_ratio)

    @property
    def window_share(self) -> float:
        return 1.0 - (self.pins_share + self.profile_share + self.working_share + self.summary_share
                      + self.recalled_share)

    def cap(self, section: str) -> int:
        """The token cap of a section (``pins``, ``profile``, ``working``, ``summary``, ``recalled``, ``window``)."""
        share = self.window_share if section == "window" else getattr(self, f"{section}_share")
        return int(self.budget * share)
