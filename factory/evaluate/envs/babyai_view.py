"""BabyAI's 7x7 egocentric view as text: objects with colour and position, walls, doors and their state.

minigrid's observation `image[x, y] = (object, colour, state)` puts the agent at
x = 3, y = 6 looking towards y = 0; cells it cannot see are `unseen`. A cell
`a` steps ahead and `s` to the side reads "2 steps ahead and 1 to the left";
"right in front of you" is the cell that pick up, toggle and GoTo missions act on.
"""

from __future__ import annotations

AGENT_X, AGENT_Y = 3, 6
OBJECTS = ("unseen", "empty", "wall", "floor", "door", "key", "ball", "box", "goal", "lava", "agent")
COLOURS = ("red", "green", "blue", "purple", "yellow", "grey")
DOOR_STATES = ("open", "closed", "locked")
_NOT_LISTED = {"unseen", "empty", "wall", "floor", "agent"}


def thing(obj: int, colour: int, state: int) -> str:
    """'a red ball', 'a locked blue door'."""
    name = OBJECTS[obj]
    if name == "door":
        return f"a {DOOR_STATES[state]} {COLOURS[colour]} door"
    if name in ("goal", "lava"):
        return f"a {name} square"
    return f"a {COLOURS[colour]} {name}"


def where(ahead: int, side: int) -> str:
    if ahead == 1 and side == 0:
        return "right in front of you"
    lateral = f"{abs(side)} to the {'left' if side < 0 else 'right'}"
    if ahead == 0:
        return f"{abs(side)} step{'s' * (abs(side) > 1)} to your {'left' if side < 0 else 'right'}"
    front = f"{ahead} step{'s' * (ahead > 1)} ahead"
    return front if side == 0 else f"{front} and {lateral}"


def visible_objects(image) -> list[str]:
    """Every object in view, nearest first."""
    found = []
    for x in range(image.shape[0]):
        for y in range(image.shape[1]):
            obj, colour, state = (int(v) for v in image[x, y])
            if OBJECTS[obj] in _NOT_LISTED:
                continue
            ahead, side = AGENT_Y - y, x - AGENT_X
            found.append((ahead + abs(side), f"{thing(obj, colour, state)} {where(ahead, side)}"))
    return [text for _, text in sorted(found)]


def walls(image) -> list[str]:
    """The wall straight ahead (when in view) and walls right beside the agent."""
    notes = []
    for y in range(AGENT_Y - 1, -1, -1):
        name = OBJECTS[int(image[AGENT_X, y, 0])]
        if name == "wall":
            ahead = AGENT_Y - y
            notes.append("a wall right in front of you" if ahead == 1 else f"a wall {ahead} steps ahead")
        if name not in ("empty", "floor"):
            break
    for x, side in ((AGENT_X - 1, "left"), (AGENT_X + 1, "right")):
        if OBJECTS[int(image[x, AGENT_Y, 0])] == "wall":
            notes.append(f"a wall on your {side}")
    return notes


def describe_view(image, carrying=None) -> str:
    seen = visible_objects(image)
    text = "You see " + "; ".join(seen) + "." if seen else "You see no objects."
    around = walls(image)
    if around:
        text += " There is " + ", ".join(around) + "."
    held = f"a {carrying.color} {carrying.type}" if carrying is not None else "nothing"
    return f"{text} You are carrying {held}."
