"""The demo's sample conversation: several topics, a thought and an action, small talk, and a returning topic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from athena_client import EventInput

__all__ = ["SAMPLE_SCOPE", "sample_conversation"]

SAMPLE_SCOPE = ("demo-tenant", "alice", "travel-and-tech-assistant")

_TURNS: list[tuple[str, str, str]] = [
    # Topic 1: planning a trip to Kyoto
    (
        "user",
        "message",
        "I'm planning a trip to Kyoto in April. Which neighbourhoods are best to stay in for seeing temples?",
    ),
    (
        "agent",
        "message",
        "For temples, Higashiyama is ideal: Kiyomizu-dera, Yasaka Shrine and the Philosopher's Path are walkable. Gion is close by, and staying near Kyoto Station makes day trips to Nara easy.",
    ),
    ("user", "message", "How many days would you recommend for Kyoto and a day trip to Nara?"),
    (
        "agent",
        "thought",
        "The user wants an itinerary length; cherry blossom season means crowds, so suggest buffer days.",
    ),
    (
        "agent",
        "message",
        "Plan four days in Kyoto plus one day for Nara. In April the cherry blossoms draw crowds, so visit Fushimi Inari early in the morning.",
    ),
    ("user", "message", "Is the JR Pass worth it for that Kyoto and Nara itinerary?"),
    (
        "agent",
        "message",
        "Not for Kyoto and Nara alone: the JR Nara line costs about 720 yen each way, far less than a 7-day JR Pass at 50,000 yen. Buy an ICOCA card instead.",
    ),
    # Topic 2: a Python bug
    (
        "user",
        "message",
        "Different question: my Python script crashes with KeyError: 'user_id' when parsing the webhook payload. What should I check?",
    ),
    ("agent", "action", "search_docs(query='webhook payload schema user_id')"),
    ("agent", "observation", "Docs: the user_id field is nested under payload['data']['user']['id'] since API v2."),
    (
        "agent",
        "message",
        "Since API v2 the id is nested: use payload['data']['user']['id'], or payload.get('data', {}).get('user', {}).get('id') to avoid the KeyError.",
    ),
    (
        "user",
        "message",
        "Can I validate the whole webhook payload structure up front instead of using get() everywhere?",
    ),
    (
        "agent",
        "message",
        "Yes: define a pydantic model for the webhook payload and call WebhookPayload.model_validate(payload); a ValidationError then tells you exactly which field is missing.",
    ),
    ("user", "message", "haha ok thanks!"),
    ("agent", "message", "You're welcome!"),
    # Small talk: its own segment, which the quality gate should not keep
    ("user", "message", "Anyway, how are you doing today?"),
    ("agent", "message", "I'm doing well, thanks for asking!"),
    ("user", "message", "lol nice"),
    ("agent", "message", "😊"),
    # Topic 3: cooking
    ("user", "message", "What's a good vegetarian dinner I can cook in 30 minutes with chickpeas and spinach?"),
    (
        "agent",
        "message",
        "Try a chickpea and spinach curry: fry onion, garlic and ginger, add curry powder and a can of tomatoes, then the chickpeas; stir in spinach at the end and serve with rice. About 25 minutes.",
    ),
    ("user", "message", "Could I make the curry with coconut milk instead of tomatoes?"),
    (
        "agent",
        "message",
        "Yes, coconut milk makes it creamier and milder; add a squeeze of lime at the end for brightness.",
    ),
    # Returning topic: Kyoto again
    ("user", "message", "Back to my Kyoto trip: which temples in Kyoto should I book in advance in April?"),
    (
        "agent",
        "message",
        "Book the Saiho-ji moss temple weeks ahead by postcard or online; the Katsura Imperial Villa also needs a reservation. Kiyomizu-dera and Fushimi Inari need no booking.",
    ),
    ("user", "message", "And what's the best time of day to visit Kiyomizu-dera in Kyoto to avoid crowds?"),
    ("agent", "message", "Arrive at opening, 6 am, or in the last hour before closing; weekday mornings are quietest."),
    ("user", "message", "Now something else entirely: how do I set up a Redis replica for my cache server?"),
]


def sample_conversation(*, start: datetime | None = None) -> list[EventInput]:
    t0 = start or (datetime.now(UTC) - timedelta(minutes=len(_TURNS)))
    return [
        EventInput(
            role=role, type=kind, content=text, timestamp=t0 + timedelta(seconds=30 * i), event_id=f"demo-{i:03d}"
        )
        for i, (role, kind, text) in enumerate(_TURNS)
    ]
