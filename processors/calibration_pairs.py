"""Shipped predicate pairs for calibrating the semantic threshold of an embedding model.

Invariants: every predicate matches the predicate pattern; a same-concept pair names one
attribute twice and carries the *same* value on both sides (the reinforcement a differently
named predicate should still reach); a different-concept pair names neighbouring attributes
that must never merge, with plausible values -- several deliberately share a value, because
"home_city Paris" vs "work_city Paris" is exactly the false merge the threshold must refuse.
The texts are built exactly as at runtime (``embedding_text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from processors.normalize import embedding_text


@dataclass(frozen=True)
class PredicatePair:
    left_predicate: str
    left_value: Mapping[str, Any]
    right_predicate: str
    right_value: Mapping[str, Any]

    def texts(self) -> tuple[str, str]:
        return (
            embedding_text(self.left_predicate, self.left_value, None),
            embedding_text(self.right_predicate, self.right_value, None),
        )


def _same(left: str, right: str, value: Mapping[str, Any]) -> PredicatePair:
    return PredicatePair(left, value, right, value)


def _diff(
    left: str, left_value: Mapping[str, Any], right: str, right_value: Mapping[str, Any]
) -> PredicatePair:
    return PredicatePair(left, left_value, right, right_value)


SAME_CONCEPT_PAIRS: tuple[PredicatePair, ...] = (
    _same("favorite_food", "favourite_dish", {"value": "sushi"}),
    _same("home_city", "city_of_residence", {"value": "Lisbon"}),
    _same("employer", "works_at", {"value": "Acme Corp"}),
    _same("bike_count", "bikes_owned", {"count": 3}),
    _same("favorite_color", "favourite_colour", {"value": "green"}),
    _same("age", "age_years", {"years": 34}),
    _same("name", "full_name", {"value": "Alice Martin"}),
    _same("job_title", "occupation", {"value": "software engineer"}),
    _same("spouse_name", "partner_name", {"value": "Sam"}),
    _same("native_language", "mother_tongue", {"value": "Portuguese"}),
    _same("phone_number", "mobile_number", {"value": "+351 912 345 678"}),
    _same("email", "email_address", {"value": "alice@example.com"}),
    _same("birthday", "date_of_birth", {"value": "1990-04-12"}),
    _same("pet_name", "name_of_pet", {"value": "Biscuit"}),
    _same("dietary_preference", "diet", {"value": "vegetarian"}),
    _same("preferred_language", "language_preference", {"value": "English"}),
    _same("timezone", "time_zone", {"value": "Europe/Lisbon"}),
    _same("home_country", "country_of_residence", {"value": "Portugal"}),
    _same("car_model", "vehicle_model", {"value": "Toyota Corolla"}),
    _same("number_of_children", "children_count", {"count": 2}),
    _same("favorite_sport", "preferred_sport", {"value": "tennis"}),
    _same("university", "alma_mater", {"value": "University of Porto"}),
    _same("nickname", "preferred_name", {"value": "Ali"}),
    _same("allergies", "allergic_to", {"value": "peanuts"}),
    _same("ui_theme", "preferred_theme", {"value": "dark"}),
    _same("favorite_movie", "favourite_film", {"value": "Spirited Away"}),
    _same("hometown", "place_of_birth", {"value": "Coimbra"}),
    _same("height_cm", "height", {"cm": 172}),
)

DIFFERENT_CONCEPT_PAIRS: tuple[PredicatePair, ...] = (
    _diff("bike_count", {"count": 3}, "car_count", {"count": 1}),
    _diff("age", {"years": 34}, "birth_year", {"year": 1990}),
    _diff("home_city", {"value": "Paris"}, "work_city", {"value": "Paris"}),
    _diff("home_city", {"value": "Lisbon"}, "hometown", {"value": "Coimbra"}),
    _diff("employer", {"value": "Acme Corp"}, "previous_employer", {"value": "Globex"}),
    _diff("favorite_color", {"value": "green"}, "favorite_food", {"value": "sushi"}),
    _diff("favorite_food", {"value": "sushi"}, "disliked_food", {"value": "olives"}),
    _diff("spouse_name", {"value": "Sam"}, "pet_name", {"value": "Biscuit"}),
    _diff("name", {"value": "Alice Martin"}, "manager_name", {"value": "Bob Stone"}),
    _diff("phone_number", {"value": "+351 912 345 678"}, "fax_number", {"value": "+351 213 000"}),
    _diff("email", {"value": "alice@example.com"}, "work_email", {"value": "a.martin@acme.com"}),
    _diff("native_language", {"value": "Portuguese"}, "learning_language", {"value": "German"}),
    _diff("number_of_children", {"count": 2}, "number_of_siblings", {"count": 2}),
    _diff("height_cm", {"cm": 172}, "weight_kg", {"kg": 68}),
    _diff("favorite_sport", {"value": "tennis"}, "favorite_team", {"value": "FC Porto"}),
    _diff("car_model", {"value": "Toyota Corolla"}, "bike_model", {"value": "Brompton C Line"}),
    _diff("home_country", {"value": "Portugal"}, "citizenship", {"value": "France"}),
    _diff("job_title", {"value": "software engineer"}, "desired_job", {"value": "architect"}),
    _diff("birthday", {"value": "1990-04-12"}, "wedding_anniversary", {"value": "2018-06-30"}),
    _diff("timezone", {"value": "Europe/Lisbon"}, "travel_destination", {"value": "Tokyo"}),
    _diff("ui_theme", {"value": "dark"}, "font_size", {"value": "large"}),
    _diff("favorite_movie", {"value": "Spirited Away"}, "favorite_book", {"value": "Dune"}),
    _diff("dietary_preference", {"value": "vegetarian"}, "allergies", {"value": "peanuts"}),
    _diff("university", {"value": "University of Porto"}, "high_school", {"value": "Liceu"}),
    _diff("monthly_rent", {"amount": 1200}, "monthly_salary", {"amount": 3500}),
    _diff("wake_up_time", {"value": "07:00"}, "bed_time", {"value": "23:00"}),
    _diff("cat_count", {"count": 1}, "dog_count", {"count": 1}),
    _diff("preferred_language", {"value": "English"}, "programming_language", {"value": "Rust"}),
)
