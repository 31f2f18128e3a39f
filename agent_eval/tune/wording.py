"""Other ways to say a task's goal, so the tuned model learns the goal's meaning rather than one sentence: for
each goal template, wordings the collection may use and wordings held out of it (for evaluation only).

Rules match a whole goal as an instance states it (parameters filled in); the first rule that fits wins, so
the specific ones (an alarm to switch off) come before the general ones (switch something off).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    train: tuple[str, ...]  # wordings the collection may use
    held_out: tuple[str, ...]  # wordings that never reach the training data


def _rule(pattern: str, train: tuple[str, ...], held_out: tuple[str, ...]) -> Rule:
    return Rule(re.compile(pattern), train, held_out)


_APP_RULES: tuple[Rule, ...] = (
    # Clock
    _rule(
        r"Add an alarm for (.+)\.",
        ("Set an alarm for {0}.", "Create an alarm at {0}."),
        ("Wake me up at {0}.",),
    ),
    _rule(
        r"Set an alarm for (.+) with the label (.+)\.",
        ("Add an alarm for {0} labelled {1}.", "Create an alarm at {0} with the label {1}."),
        ("I need an alarm at {0} named {1}.",),
    ),
    _rule(
        r"Turn off my (.+) alarm\.",
        ("Switch off my {0} alarm.", "Disable my {0} alarm."),
        ("I don't need my {0} alarm, turn it off.",),
    ),
    _rule(
        r"How many of my alarms are switched on\?",
        ("How many alarms are on?", "How many alarms do I have switched on?"),
        ("Count the alarms that are enabled.",),
    ),
    _rule(
        r"Delete the alarm labelled (.+)\.",
        ("Remove the alarm called {0}.", "Get rid of the alarm labelled {0}."),
        ("Erase the alarm with the label {0}.",),
    ),
    _rule(
        r"When is my earliest alarm\?",
        ("What time is my earliest alarm?", "Which alarm rings first?"),
        ("What's the first alarm I have set?",),
    ),
    # Calendar
    _rule(
        r'Create an event "(.+)" on (.+) at (.+)\.',
        ('Add the event "{0}" on {1} at {2}.', 'Put "{0}" in my calendar on {1} at {2}.'),
        ('Schedule "{0}" for {1} at {2}.',),
    ),
    _rule(
        r'Delete the event "(.+)" from my calendar\.',
        ('Remove the event "{0}" from my calendar.', 'Delete "{0}" from the calendar.'),
        ('Cancel my "{0}" event.',),
    ),
    _rule(
        r"What time is my (.+)\?",
        ("When is my {0}?", "At what time is my {0}?"),
        ("Tell me what time my {0} starts.",),
    ),
    _rule(
        r"What is the next event in my calendar\?",
        ("What's my next calendar event?", "Which event is next in my calendar?"),
        ("What comes up next on my calendar?",),
    ),
    _rule(
        r"How many events do I have on (.+)\?",
        ("How many events are on {0}?", "Count my events on {0}."),
        ("What number of events is in my calendar for {0}?",),
    ),
    _rule(
        r'Rename my event "(.+)" to "(.+)"\.',
        ('Change the title of "{0}" to "{1}".', 'Rename the event "{0}" to "{1}".'),
        ('Call my event "{0}" "{1}" instead.',),
    ),
    # Contacts
    _rule(
        r"Add a contact named (.+) with the phone number (.+)\.",
        ("Create a contact {0} with the number {1}.", "Save {0} as a new contact, number {1}."),
        ("New contact: {0}, {1}.",),
    ),
    _rule(
        r"How many contacts are saved on this phone\?",
        ("How many contacts do I have?", "Count the contacts on this phone."),
        ("What is the number of saved contacts?",),
    ),
    _rule(
        r"Delete the contact (.+)\.",
        ("Remove the contact {0}.", "Delete {0} from my contacts."),
        ("Get rid of {0} in Contacts.",),
    ),
    _rule(
        r"Change (.+)'s phone number to (.+)\.",
        ("Set {0}'s phone number to {1}.", "Edit {0}'s number to {1}."),
        ("{0} has a new number, {1}: save it.",),
    ),
    _rule(
        r"What is (.+)'s phone number\?",
        ("What's {0}'s number?", "Tell me {0}'s phone number."),
        ("Look up the phone number of {0}.",),
    ),
    _rule(
        r"Search my contacts for (.+) and tell me the number\.",
        (
            "Find {0} in my contacts and give me the number.",
            "Look up {0} in Contacts and tell me the number.",
        ),
        ("Which number does {0} have? Search my contacts.",),
    ),
    # Cross-app
    _rule(
        r"Set an alarm for the start of my (.+) event and label it (.+)\.",
        (
            "Add an alarm at the time my {0} event starts, labelled {1}.",
            "Create an alarm {1} for when my {0} event starts.",
        ),
        ("Make an alarm named {1} at the start time of my {0} event.",),
    ),
    _rule(
        r'Save the number that texted me "(.+)" as a contact named (.+)\.',
        (
            'Add the number that sent me "{0}" to my contacts as {1}.',
            'Create a contact {1} for the number that texted "{0}".',
        ),
        ('Whoever texted "{0}": save them as {1}.',),
    ),
    _rule(
        r"Save what (.+) last texted me as a Markor note titled (.+)\.",
        (
            "Put {0}'s last text into a Markor note called {1}.",
            "Copy what {0} last texted me into a new Markor note titled {1}.",
        ),
        ("Make a Markor note {1} holding {0}'s latest text.",),
    ),
    _rule(
        r"Send (.+)'s phone number to (.+) in a text message\.",
        ("Text {1} {0}'s phone number.", "Send {1} a text with {0}'s number."),
        ("Share {0}'s number with {1} by SMS.",),
    ),
    _rule(
        r"Text (.+) the time of my (.+)\.",
        ("Send {0} a text with the time of my {1}.", "Tell {0} in a text when my {1} is."),
        ("Message {0} what time my {1} is at.",),
    ),
    # Files
    _rule(
        r"How many files are in (.+)\?",
        ("How many files does {0} hold?", "Count the files in {0}."),
        ("What is the number of files in {0}?",),
    ),
    _rule(
        r"Delete (.+) from my Downloads\.",
        ("Remove {0} from my Downloads.", "Delete the file {0} in Download."),
        ("Get rid of {0} in Downloads.",),
    ),
    _rule(
        r"Move (.+) from Download to (.+)\.",
        ("Move the file {0} from Download into {1}.", "Take {0} out of Download and put it in {1}."),
        ("Relocate {0} from Download to {1}.",),
    ),
    _rule(
        r"Move (.+) out of Pictures into Documents\.",
        ("Move {0} from Pictures to Documents.", "Take {0} out of Pictures and put it in Documents."),
        ("Relocate {0} from Pictures to Documents.",),
    ),
    _rule(
        r"Rename (.+) in Download to (.+)\.",
        ("Rename the file {0} in Download to {1}.", "In Download, rename {0} to {1}."),
        ("Give {0} in Download the new name {1}.",),
    ),
    # Markor
    _rule(
        r'Add the line "(.+)" at the end of my (.+) note\.',
        ('Append "{0}" to my {1} note.', 'Add "{0}" as the last line of my {1} note.'),
        ('Write "{0}" at the bottom of my {1} note.',),
    ),
    _rule(
        r"Create a note in Markor titled (.+) with the text: (.+)",
        ("Make a Markor note called {0} that says: {1}", "New Markor note, title {0}, text: {1}"),
        ("Write a note named {0} in Markor containing: {1}",),
    ),
    _rule(
        r"Delete my note (.+)\.",
        ("Remove my note {0}.", "Delete the Markor note {0}."),
        ("Get rid of the {0} note.",),
    ),
    _rule(
        r"What is the (.+) written in my (.+) note\?",
        ("What {0} does my {1} note say?", "Read the {0} from my {1} note."),
        ("Tell me the {0} noted in my {1} note.",),
    ),
    # Messages
    _rule(
        r"Delete my conversation with (.+)\.",
        ("Remove my conversation with {0}.", "Delete my message thread with {0}."),
        ("Erase the chat with {0}.",),
    ),
    _rule(
        r"What did (.+) last text me\?",
        ("What was {0}'s last text to me?", "What is the last message from {0}?"),
        ("Read me {0}'s most recent text.",),
    ),
    _rule(
        r'Reply "(.+)" to the latest message I received\.',
        ('Answer the latest message I got with "{0}".', 'Send "{0}" as a reply to my newest message.'),
        ('Respond "{0}" to the most recent text.',),
    ),
    _rule(
        r"Send a text message to (.+) saying: (.+)",
        ("Send {0} a text message that says: {1}", "Text the number {0}: {1}"),
        ("Message the number {0} with: {1}",),
    ),
    _rule(
        r"Send (.+) the message: (.+)",
        ("Send a text to {0}: {1}", "Message {0}: {1}"),
        ("Write to {0}: {1}",),
    ),
    _rule(
        r"Text (.+): (.+)",
        ("Send {0} a text: {1}", "Send {0} this text: {1}"),
        ("Write {0} a text saying {1}",),
    ),
    _rule(
        r"What does the newest text from (.+) say\?",
        ("What is the newest text from {0}?", "Read the latest message from {0}."),
        ("Which text did {0} send last?",),
    ),
)

_SETTINGS_RULES: tuple[Rule, ...] = (
    _rule(
        r"Turn on (.+) and (.+)\.",
        ("Switch on {0} and {1}.", "Enable {0} and {1}.", "Turn on both {0} and {1}."),
        ("I need {0} and {1} on.",),
    ),
    _rule(
        r"Turn off (.+) and (.+)\.",
        ("Switch off {0} and {1}.", "Disable {0} and {1}.", "Turn off both {0} and {1}."),
        ("I need {0} and {1} off.",),
    ),
    _rule(r"Turn on (.+)\.", ("Switch on {0}.", "Enable {0}.", "Turn {0} on."), ("Can you put {0} on?",)),
    _rule(
        r"Turn off (.+)\.", ("Switch off {0}.", "Disable {0}.", "Turn {0} off."), ("Can you put {0} off?",)
    ),
    _rule(r"Turn (.+) on\.", ("Turn on {0}.", "Switch {0} on.", "Enable {0}."), ("Can you put {0} on?",)),
    _rule(
        r"Turn (.+) off\.", ("Turn off {0}.", "Switch {0} off.", "Disable {0}."), ("Can you put {0} off?",)
    ),
    _rule(
        r"Make sure (.+) is (on|off)\.",
        ("Check that {0} is {1}.", "{0} should be {1}.", "Ensure {0} is {1}."),
        ("Please confirm {0} is {1}.",),
    ),
    _rule(
        r"Set the (.+) to (.+)\.",
        ("Change the {0} to {1}.", "Make the {0} {1}."),
        ("I'd like the {0} set to {1}.",),
    ),
    _rule(
        r"Change the (.+) to (.+)\.",
        ("Set the {0} to {1}.", "Rename: {0} to {1}."),
        ("Update the {0} to {1}.",),
    ),
    _rule(
        r"Open the (.+) page\.", ("Go to the {0} page.", "Show the {0} page."), ("Take me to the {0} page.",)
    ),
    _rule(
        r"Show the (.+)\.", ("Display the {0}.", "Make the phone show the {0}."), ("I want to see the {0}.",)
    ),
    _rule(r"Hide the (.+)\.", ("Don't show the {0}.", "Remove the {0}."), ("I don't want to see the {0}.",)),
)

RULES: tuple[Rule, ...] = (*_APP_RULES, *_SETTINGS_RULES)


def _rule_for(goal: str) -> tuple[Rule, tuple[str, ...]] | None:
    for rule in RULES:
        m = rule.pattern.fullmatch(goal)
        if m:
            return rule, m.groups()
    return None


def _fill(template: str, groups: tuple[str, ...]) -> str:
    text = template.format(*groups)
    return text[0].upper() + text[1:]


def goal_variants(goal: str) -> list[str]:
    """The goal as written first, then the rewordings the collection may use (none when no rule fits)."""
    found = _rule_for(goal)
    if found is None:
        return [goal]
    rule, groups = found
    return [goal, *(_fill(t, groups) for t in rule.train)]


def held_out_wordings(goal: str) -> list[str]:
    """Rewordings of the goal kept out of the training data (for evaluation), none when no rule fits."""
    found = _rule_for(goal)
    if found is None:
        return []
    rule, groups = found
    return [_fill(t, groups) for t in rule.held_out]


def opposite_goal(goal: str) -> str | None:
    """The single-switch goal with its on/off word swapped ("Turn on X." → "Turn off X."), None for any
    other goal (two switches, a value, an app's record)."""
    if " and " in goal:
        return None
    patterns = (
        (r"(Turn|Switch) (on|off) (.+)\.", "{0} {w} {2}."),
        (r"(Turn|Switch) (.+) (on|off)\.", "{0} {1} {w}."),
        (r"(Enable|Disable) (.+)\.", "{w} {1}."),
        (r"(Make sure|Check that|Ensure) (.+) is (on|off)\.", "{0} {1} is {w}."),
        (r"(.+) should be (on|off)\.", "{0} should be {w}."),
        (r"(Show|Hide) the (.+)\.", "{w} the {1}."),
    )
    swap = {
        "on": "off",
        "off": "on",
        "Show": "Hide",
        "Hide": "Show",
        "Enable": "Disable",
        "Disable": "Enable",
    }
    for pattern, template in patterns:
        m = re.fullmatch(pattern, goal)
        if m:
            word = next(g for g in m.groups() if g in swap)
            return template.format(*m.groups(), w=swap[word])
    return None
