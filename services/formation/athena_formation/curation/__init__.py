"""What a person does to one memory: delete, correct or pin a chain, read the events behind it, see and
admit rejected segments, restore an archived chain, export everything held about a user."""
