"""The value pools of the benchmark workload (``tests/support/workload.py``).

~1,000 subjects, 1-2 fake candidates per event (creates, reinforcements, supersedes, a few
notes), short realistic contents: these lists are what the events are made of. Changing any
of them changes every benchmark's input (and the fault-injection digest).
"""

from __future__ import annotations

from typing import Any

CITIES = [
    "Lisbon",
    "Berlin",
    "Austin",
    "Osaka",
    "Nairobi",
    "Toronto",
    "Lyon",
    "Krakow",
    "Seoul",
    "Denver",
    "Porto",
    "Dublin",
    "Melbourne",
    "Bogota",
    "Oslo",
    "Chennai",
    "Valencia",
    "Boston",
    "Tallinn",
    "Cape Town",
    "Kyoto",
    "Montreal",
    "Vienna",
    "Lima",
]
COMPANIES = [
    "Acme Corp",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Stark Industries",
    "Wayne Enterprises",
    "Soylent",
    "Cyberdyne",
    "Tyrell",
    "Wonka Industries",
    "Vandelay Imports",
    "Pied Piper",
    "Aperture Science",
    "Monarch Solutions",
]
COLORS = [
    "teal",
    "crimson",
    "navy blue",
    "olive green",
    "mustard yellow",
    "lavender",
    "charcoal",
    "coral",
    "burgundy",
    "sky blue",
]
FOODS = [
    "ramen",
    "tacos al pastor",
    "mushroom risotto",
    "pho",
    "margherita pizza",
    "falafel",
    "sushi",
    "pad thai",
    "shakshuka",
    "dumplings",
    "paella",
]
DIETS = ["vegetarian", "vegan", "pescatarian", "gluten-free", "keto", "no dietary restrictions"]
LANGS = ["Portuguese", "German", "Japanese", "Spanish", "French", "Korean", "Polish", "Swahili"]
TITLES = [
    "backend engineer",
    "product manager",
    "data scientist",
    "nurse",
    "teacher",
    "UX designer",
    "accountant",
    "site reliability engineer",
    "architect",
    "chef",
]
SPORTS = [
    "bouldering",
    "tennis",
    "trail running",
    "swimming",
    "cycling",
    "yoga",
    "chess",
    "basketball",
    "rowing",
]
PETS = ["Miso", "Biscuit", "Pixel", "Luna", "Waffles", "Pepper", "Mochi", "Ziggy"]
TIMEZONES = [
    "Europe/Lisbon",
    "Europe/Berlin",
    "America/Chicago",
    "Asia/Tokyo",
    "Africa/Nairobi",
    "America/Toronto",
    "Australia/Melbourne",
]

# predicate -> (value key, value pool, statement templates, supersede templates)
PREDICATES: dict[str, tuple[str, list[Any], list[str], list[str]]] = {
    "home_city": (
        "value",
        CITIES,
        ["I live in {v}.", "Home for me is {v}."],
        ["I moved to {v} last month.", "We just relocated to {v}."],
    ),
    "employer": (
        "value",
        COMPANIES,
        ["I work at {v}.", "My employer is {v}."],
        ["I started a new job at {v}.", "I switched jobs, now at {v}."],
    ),
    "favorite_color": (
        "value",
        COLORS,
        ["My favorite color is {v}.", "I love {v}."],
        ["These days my favorite color is {v}.", "Changed my mind: {v} is my color."],
    ),
    "favorite_food": (
        "value",
        FOODS,
        ["I could eat {v} every day.", "My favorite food is {v}."],
        ["Lately I'm obsessed with {v}.", "My new favorite is {v}."],
    ),
    "diet": (
        "value",
        DIETS,
        ["I'm {v}.", "Just so you know, I'm {v}."],
        ["I went {v} this year.", "I've switched to being {v}."],
    ),
    "native_language": (
        "value",
        LANGS,
        ["My first language is {v}.", "I grew up speaking {v}."],
        ["Actually my native language is {v}.", "Correction: I grew up with {v}."],
    ),
    "job_title": (
        "value",
        TITLES,
        ["I'm a {v}.", "I work as a {v}."],
        ["I got promoted, I'm a {v} now.", "I changed roles and I'm a {v} now."],
    ),
    "hobby": (
        "value",
        SPORTS,
        ["On weekends I do {v}.", "I'm really into {v}."],
        ["I picked up {v} recently.", "I stopped the old hobby, now it's {v}."],
    ),
    "pet_name": (
        "value",
        PETS,
        ["My dog is called {v}.", "Our cat's name is {v}."],
        ["We adopted a new puppy named {v}.", "We renamed the cat {v}."],
    ),
    "timezone": (
        "value",
        TIMEZONES,
        ["I'm on {v} time.", "Schedule things in {v} please."],
        ["I'm on {v} time from now on.", "Please switch my timezone to {v}."],
    ),
    "age": (
        "years",
        list(range(19, 78)),
        ["I am {v} years old.", "I'm {v}."],
        ["I turned {v} yesterday.", "Birthday today, I'm {v} now."],
    ),
    "bike_count": (
        "count",
        list(range(0, 6)),
        ["I have {v} bikes.", "There are {v} bikes in our garage."],
        ["I sold one, I have {v} bikes now.", "Bought another, I have {v} bikes now."],
    ),
}
NOTES = [
    "Prefers replies in bullet points",
    "Wants reminders the evening before",
    "Does not like being called by their last name",
    "Likes a window seat on flights",
    "Reads on the train to work",
    "Is planning a trip in the spring",
    "Asked to keep summaries under five lines",
    "Is learning to play the guitar",
]
FILLERS = [
    "",
    "",
    "Thanks!",
    "Quick update.",
    "btw",
    "Anyway, back to the itinerary.",
    "Can you remember that?",
    "Also, the meeting moved to Thursday.",
    "Good morning!",
    "Not urgent.",
    "Just for context.",
]
