"""Labelled predicate pairs for deciding whether two predicates name one attribute (issue 11).

An LLM names the same attribute of a person differently from one call to the next
(``bike_count`` then ``bikes_owned``). Each pair here puts an active fact's predicate and value
(left) beside a candidate's (right) for the same subject, labelled with the truth: SAME concept
(the candidate supersedes or reinforces the fact) or DIFFERENT concept (a separate fact). The
rules and bounds that decide SAME / UNSURE / DIFFERENT are tuned on the ``tune`` split and
checked on ``holdout``; the acceptance is measured later on pairs that are in no split.

A decider may use the predicates and the *shape* of the values (keys and JSON types), never the
value text: the values are here so that shapes are realistic and so that a supersede really
changes the value.

Invariants (tests/unit/test_attribute_pairs.py):

- Every predicate matches ``^[a-z][a-z0-9_]{0,63}$``; the two predicates of a pair differ;
  values are non-empty JSON objects.
- A same-concept pair is a *supersede*: its right value differs from its left value as JSON
  (canonical, sorted keys). Pairs flagged ``has_reinforcement`` also yield a reinforcement
  variant (``reinforcement()``) whose right value equals the left value.
- No unordered predicate pair occurs twice, within a list or across the two lists.
- The labels are consistent: joining the predicates of all same-concept pairs into classes
  (transitively), no different-concept pair has both predicates in one class.
- Same-concept pairs never differ in a number (``5k``/``10k``, ``1rm``/``5rm``) nor in a
  meaning-changing qualifier with its opposite on the other side (home/work, first/last,
  start/end, min/max, former/current, mother/father, ...).
- ``split_of`` depends only on the unordered predicate pair and the label (sha256, not Python's
  salted ``hash``), so a pair never changes split when values are edited or pairs are added;
  it puts about 60% of each list in ``tune`` and 40% in ``holdout``.
- Every pair's ``group`` is one of ``GROUPS``.

Labelling decisions (a future pair is labelled the same way):

- A qualifier that only restates the default, with no opposite on the other side, keeps the
  concept: memory holds the present, so ``employer``/``current_employer``,
  ``medications``/``current_medications``, ``bedtime``/``usual_bed_time``,
  ``next_trip_date``/``upcoming_trip_date`` are SAME. ``current`` against ``former``,
  ``previous``, ``past``, ``old``, ``first`` or ``birth`` is DIFFERENT.
- A unit is a representation, not an attribute: ``height``/``height_cm``,
  ``weight_kg``/``body_weight_lbs`` are SAME (the value needs converting, the fact is one).
- A different owner is a different attribute: ``dog_weight_kg``/``weight_kg``,
  ``partner_phone_number``/``phone_number``, ``mother_first_name``/``first_name``.
- Goal or target against actual (``target_weight_kg``/``weight_kg``), a subset against its
  whole (``business_trips_per_year``/``trips_per_year``, ``half_marathon_pb``/``marathon_pb``)
  and an aspect against its object (``medication``/``medication_dosage``,
  ``car_make``/``car_model``) are DIFFERENT.
- Pairs a careful human would hesitate on are in neither list: ``city``/``home_city``,
  ``timezone``/``utc_offset``, ``alarm_time``/``wake_up_time``, ``hometown``/``place_of_birth``,
  ``emergency_contact``/``next_of_kin``, ``shoe_size_eu``/``shoe_size_us``.

Values are plain dicts shared by every caller: treat them as read-only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

Split = Literal["tune", "holdout"]

TUNE_PERCENT: Final = 60

GROUPS: Final = (
    "home_location",
    "work",
    "family",
    "pets",
    "health",
    "preferences",
    "hobbies",
    "fitness",
    "devices_accounts",
    "education",
    "travel",
    "schedule_locale",
    "finance",
    "vehicles",
    "measurements",
    "contact",
    "identity",
)


def split_of(left_predicate: str, right_predicate: str, same: bool) -> Split:
    """The split of a pair: a fixed hash of its label and unordered predicates."""
    first, second = sorted((left_predicate, right_predicate))
    key = f"{'same' if same else 'different'}:{first}|{second}".encode()
    bucket = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % 100
    return "tune" if bucket < TUNE_PERCENT else "holdout"


@dataclass(frozen=True)
class AttributePair:
    left_predicate: str
    left_value: Mapping[str, Any]
    right_predicate: str
    right_value: Mapping[str, Any]
    group: str
    same: bool  # the truth: one attribute named twice
    has_reinforcement: bool = False  # same-concept only: a reinforcement variant exists

    @property
    def split(self) -> Split:
        return split_of(self.left_predicate, self.right_predicate, self.same)

    @property
    def key(self) -> frozenset[str]:
        return frozenset((self.left_predicate, self.right_predicate))

    def reinforcement(self) -> AttributePair:
        """The same predicates with the left value repeated on the right (values equal)."""
        if not (self.same and self.has_reinforcement):
            raise ValueError("only same-concept pairs flagged has_reinforcement have a variant")
        return replace(self, right_value=self.left_value)


def canonical_json(value: Mapping[str, Any]) -> str:
    """Sorted-key JSON, the equality used for "values differ" (stdlib only)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_R: Final = "reinforce"

# Each row: (left_predicate, left_value, right_predicate, right_value[, _R]).
_Row = tuple[Any, ...]

_SAME_ROWS: dict[str, tuple[_Row, ...]] = {
    "home_location": (
        ("home_city", {"city": "Lisbon"}, "city_of_residence", {"city": "Porto"}, _R),
        ("lives_in", {"city": "Berlin"}, "residence_city", {"city": "Munich"}),
        ("residence_city", {"city": "Munich"}, "current_city", {"name": "Hamburg"}),
        (
            "home_address",
            {"street": "12 Rua Augusta", "city": "Lisbon"},
            "residential_address",
            {"street": "4 Avenida da Liberdade", "city": "Lisbon"},
        ),
        ("country_of_residence", {"country": "Portugal"}, "residence_country", {"name": "Spain"}),
        ("neighborhood", {"name": "Alfama"}, "neighbourhood", {"name": "Baixa"}, _R),
        ("hometown", {"town": "Coimbra"}, "home_town", {"name": "Braga"}),
        ("zip_code", {"code": "1100-148"}, "postal_code", {"postcode": "4000-322"}),
        ("housing_type", {"type": "apartment"}, "home_type", {"kind": "house"}),
        ("number_of_bedrooms", {"count": 2}, "bedroom_count", {"count": 3}),
        ("state_of_residence", {"state": "Oregon"}, "home_state", {"state": "Washington"}),
        ("moved_in_date", {"date": "2021-03-01"}, "move_in_date", {"date": "2023-09-15"}),
        ("landlord_name", {"name": "Mr. Silva"}, "landlord", {"name": "Ana Costa"}),
        ("home_ownership", {"status": "renting"}, "housing_tenure", {"status": "owner"}),
        ("floor_number", {"floor": 3}, "apartment_floor", {"floor": 5}),
        ("commute_distance_km", {"km": 12}, "commute_distance", {"distance": 18, "unit": "km"}),
        ("commute_mode", {"mode": "bike"}, "commute_method", {"mode": "metro"}),
        ("home_square_meters", {"m2": 80}, "apartment_size_sqm", {"size": 95}),
    ),
    "work": (
        ("job_title", {"title": "software engineer"}, "position", {"title": "staff engineer"}, _R),
        ("position", {"title": "analyst"}, "job_role", {"role": "data scientist"}),
        ("occupation", {"value": "nurse"}, "profession", {"value": "midwife"}, _R),
        ("job_title", {"title": "teacher"}, "occupation", {"occupation": "headteacher"}),
        ("employer", {"company": "Acme Corp"}, "works_at", {"name": "Globex"}),
        ("employer", {"name": "Acme"}, "current_employer", {"name": "Initech"}),
        ("employer_name", {"name": "Acme"}, "company_worked_for", {"company": "Umbrella"}),
        (
            "annual_salary",
            {"amount": 85000, "currency": "EUR"},
            "yearly_salary",
            {"amount": 92000, "currency": "EUR"},
            _R,
        ),
        ("monthly_salary", {"amount": 3200}, "salary_per_month", {"amount": 3500}),
        ("manager_name", {"name": "Bob Stone"}, "boss_name", {"name": "Carol King"}, _R),
        ("manager", {"name": "Bob Stone"}, "line_manager", {"name": "Dan Wu"}),
        ("team", {"team": "Payments"}, "team_name", {"name": "Platform"}),
        ("department", {"name": "Engineering"}, "dept", {"dept": "Marketing"}),
        ("years_of_experience", {"years": 7}, "experience_years", {"years": 8}),
        ("work_city", {"city": "Lisbon"}, "city_of_work", {"city": "Madrid"}),
        ("remote_work_status", {"mode": "remote"}, "work_arrangement", {"type": "hybrid"}),
        ("job_start_date", {"date": "2020-01-06"}, "employment_start_date", {"date": "2022-05-02"}),
        ("weekly_working_hours", {"hours": 40}, "work_hours_per_week", {"hours": 35}),
        ("employee_id", {"id": "E1234"}, "staff_number", {"number": "E5678"}),
        ("notice_period", {"weeks": 4}, "notice_period_weeks", {"weeks": 8}),
        ("num_direct_reports", {"count": 3}, "direct_reports_count", {"count": 5}),
        ("industry", {"industry": "fintech"}, "sector", {"sector": "healthcare"}),
        ("work_start_time", {"time": "09:00"}, "workday_start", {"time": "08:30"}),
    ),
    "family": (
        ("spouse_name", {"name": "Sam"}, "partner_name", {"name": "Alex"}, _R),
        ("spouse_name", {"name": "Sam"}, "name_of_spouse", {"name": "Samuel"}),
        ("number_of_children", {"count": 2}, "children_count", {"count": 3}, _R),
        ("num_kids", {"n": 1}, "child_count", {"count": 2}),
        ("number_of_siblings", {"count": 2}, "sibling_count", {"count": 3}),
        ("marital_status", {"status": "married"}, "relationship_status", {"status": "single"}),
        ("mother_name", {"name": "Maria"}, "mum_name", {"name": "Maria Silva"}),
        ("father_name", {"name": "José"}, "dad_name", {"name": "Joe"}),
        (
            "children_names",
            {"names": ["Ana", "Rui"]},
            "kids_names",
            {"names": ["Ana", "Rui", "Tom"]},
        ),
        ("wedding_date", {"date": "2018-06-30"}, "date_of_wedding", {"date": "2018-07-01"}),
        ("wedding_anniversary", {"date": "06-30"}, "marriage_anniversary", {"day": "07-01"}),
        ("best_friend", {"name": "Joana"}, "best_friend_name", {"name": "Rita"}, _R),
        ("son_name", {"name": "Tom"}, "name_of_son", {"name": "Tomás"}),
        ("daughter_age", {"years": 5}, "age_of_daughter", {"age": 6}),
        ("household_size", {"people": 4}, "people_in_household", {"count": 5}),
        ("spouse_job", {"title": "nurse"}, "partner_occupation", {"job": "doctor"}),
        ("youngest_child_name", {"name": "Leo"}, "name_of_youngest_child", {"name": "Lea"}),
    ),
    "pets": (
        ("pet_name", {"name": "Biscuit"}, "name_of_pet", {"name": "Cookie"}, _R),
        ("dog_name", {"name": "Rex"}, "dogs_name", {"name": "Max"}),
        ("cat_name", {"name": "Luna"}, "name_of_cat", {"name": "Mia"}),
        ("number_of_pets", {"count": 2}, "pet_count", {"count": 3}, _R),
        ("dog_breed", {"breed": "beagle"}, "breed_of_dog", {"breed": "labrador"}),
        ("dog_age", {"years": 4}, "age_of_dog", {"age": 5}),
        ("cat_count", {"count": 1}, "number_of_cats", {"count": 2}),
        ("dog_count", {"count": 2}, "dogs_owned", {"n": 1}),
        ("pet_type", {"species": "dog"}, "pet_species", {"species": "cat"}),
        ("vet_name", {"name": "Dr. Reis"}, "veterinarian", {"name": "Dr. Lopes"}),
        ("dog_weight_kg", {"kg": 12}, "dog_weight", {"value": 13, "unit": "kg"}),
        ("fish_count", {"count": 5}, "number_of_fish", {"count": 6}),
        ("horse_name", {"name": "Star"}, "name_of_horse", {"name": "Storm"}),
        ("dog_walker", {"name": "Pedro"}, "dog_walker_name", {"name": "Luis"}),
    ),
    "health": (
        (
            "allergies",
            {"items": ["peanuts"]},
            "allergic_to",
            {"allergens": ["peanuts", "shellfish"]},
        ),
        ("food_allergies", {"items": ["peanuts"]}, "food_allergy", {"items": ["shellfish"]}, _R),
        (
            "medications",
            {"names": ["metformin"]},
            "current_medications",
            {"names": ["metformin", "lisinopril"]},
        ),
        ("blood_type", {"type": "A+"}, "blood_group", {"group": "O-"}),
        ("diet", {"type": "vegetarian"}, "dietary_preference", {"diet": "vegan"}),
        (
            "dietary_restrictions",
            {"items": ["gluten"]},
            "diet_restrictions",
            {"items": ["lactose"]},
        ),
        ("family_doctor", {"name": "Dr. Costa"}, "gp_name", {"name": "Dr. Alves"}),
        ("doctor_name", {"name": "Dr. Costa"}, "physician_name", {"name": "Dr. Faria"}),
        (
            "chronic_condition",
            {"condition": "asthma"},
            "chronic_conditions",
            {"conditions": ["eczema"]},
        ),
        ("resting_heart_rate", {"bpm": 58}, "resting_hr_bpm", {"bpm": 62}, _R),
        (
            "blood_pressure",
            {"systolic": 120, "diastolic": 80},
            "blood_pressure_mmhg",
            {"sys": 130, "dia": 85},
        ),
        ("sleep_hours", {"hours": 7}, "hours_of_sleep", {"hours": 6}, _R),
        ("smoking_status", {"status": "smoker"}, "is_smoker", {"value": False}),
        ("coffee_cups_per_day", {"cups": 3}, "daily_coffee_cups", {"count": 2}),
        ("dentist_name", {"name": "Dr. Melo"}, "dentist", {"name": "Dr. Paiva"}),
        ("lactose_intolerant", {"value": True}, "lactose_intolerance", {"value": False}),
        (
            "glasses_prescription",
            {"left": -1.5, "right": -1.75},
            "eyeglass_prescription",
            {"od": -2.0, "os": -1.75},
        ),
        (
            "health_insurance_provider",
            {"name": "Medis"},
            "health_insurer",
            {"company": "Multicare"},
        ),
    ),
    "preferences": (
        ("favorite_food", {"food": "pizza"}, "favourite_dish", {"dish": "sushi"}),
        ("favorite_color", {"color": "green"}, "favourite_colour", {"colour": "blue"}, _R),
        ("favorite_movie", {"title": "Spirited Away"}, "favourite_film", {"title": "Alien"}, _R),
        ("favorite_book", {"title": "Dune"}, "fav_book", {"book": "Emma"}),
        ("favorite_band", {"name": "Radiohead"}, "favourite_band", {"band": "Muse"}),
        ("favorite_music_genre", {"genre": "jazz"}, "preferred_music_genre", {"genre": "rock"}),
        ("favorite_drink", {"drink": "coffee"}, "favourite_beverage", {"name": "tea"}),
        ("coffee_order", {"order": "flat white"}, "usual_coffee_order", {"drink": "cortado"}),
        ("favorite_season", {"season": "autumn"}, "preferred_season", {"season": "spring"}),
        ("favorite_cuisine", {"cuisine": "Thai"}, "preferred_cuisine", {"cuisine": "Italian"}),
        ("favorite_sports_team", {"team": "FC Porto"}, "favourite_team", {"team": "Benfica"}),
        ("favorite_author", {"name": "Le Guin"}, "favourite_writer", {"name": "Borges"}),
        ("favorite_tv_show", {"title": "The Wire"}, "favourite_series", {"title": "Dark"}),
        ("favorite_animal", {"animal": "otter"}, "favourite_animal", {"name": "fox"}),
        ("ui_theme", {"theme": "dark"}, "preferred_theme", {"theme": "light"}),
        ("favorite_fruit", {"fruit": "mango"}, "preferred_fruit", {"fruit": "kiwi"}),
        ("disliked_foods", {"items": ["olives"]}, "food_dislikes", {"items": ["anchovies"]}, _R),
        ("favorite_podcast", {"name": "Radiolab"}, "fav_podcast", {"podcast": "99% Invisible"}),
        (
            "favorite_holiday_destination",
            {"place": "Azores"},
            "favourite_vacation_spot",
            {"place": "Madeira"},
        ),
        (
            "preferred_temperature_unit",
            {"unit": "celsius"},
            "temperature_unit",
            {"unit": "fahrenheit"},
        ),
        (
            "favorite_restaurant",
            {"name": "Cervejaria Ramiro"},
            "fave_restaurant",
            {"name": "Taberna"},
        ),
    ),
    "hobbies": (
        ("hobbies", {"items": ["climbing", "chess"]}, "hobby_list", {"items": ["climbing"]}, _R),
        ("musical_instrument", {"instrument": "guitar"}, "instrument_played", {"name": "piano"}),
        ("favorite_sport", {"sport": "tennis"}, "preferred_sport", {"sport": "padel"}),
        ("books_read_this_year", {"count": 12}, "number_of_books_read_this_year", {"count": 15}),
        ("chess_rating", {"elo": 1650}, "chess_elo", {"rating": 1700}),
        ("favorite_video_game", {"title": "Zelda"}, "favourite_videogame", {"title": "Celeste"}),
        ("game_console", {"name": "PS5"}, "gaming_console", {"name": "Switch"}),
        ("houseplant_count", {"count": 14}, "number_of_houseplants", {"count": 20}),
        ("instrument_years", {"years": 5}, "years_playing_instrument", {"years": 6}),
        ("board_game_collection_size", {"count": 40}, "number_of_board_games", {"count": 45}),
        ("book_club", {"name": "Tuesday Readers"}, "book_club_name", {"name": "Page Turners"}, _R),
        ("volunteer_organization", {"name": "Red Cross"}, "volunteers_at", {"org": "Food Bank"}),
        ("stamps_collected", {"count": 300}, "stamp_collection_size", {"stamps": 320}),
        ("dance_style", {"style": "salsa"}, "dancing_style", {"style": "tango"}),
        (
            "languages_learning",
            {"languages": ["German"]},
            "languages_being_learned",
            {"items": ["Dutch"]},
        ),
    ),
    "fitness": (
        ("personal_best_5k", {"time": "22:30"}, "pb_5k", {"time": "21:58"}, _R),
        ("marathon_pr", {"time": "3:45:10"}, "marathon_personal_record", {"time": "3:39:02"}),
        ("bench_press_max", {"kg": 80}, "max_bench_press_kg", {"kg": 85}),
        ("weekly_running_distance", {"km": 30}, "km_run_per_week", {"km": 35}),
        ("gym_name", {"name": "Fitness Hut"}, "gym", {"name": "Holmes Place"}),
        ("daily_step_goal", {"steps": 10000}, "step_goal_per_day", {"steps": 12000}),
        ("vo2_max", {"value": 48}, "vo2max", {"value": 50}),
        ("training_days_per_week", {"days": 4}, "weekly_training_days", {"days": 5}),
        (
            "half_marathon_pb",
            {"time": "1:45:00"},
            "half_marathon_personal_best",
            {"time": "1:41:30"},
        ),
        ("cycling_ftp", {"watts": 250}, "ftp_watts", {"watts": 260}),
        ("deadlift_1rm_kg", {"kg": 140}, "deadlift_one_rep_max", {"weight": 150, "unit": "kg"}),
        ("running_shoes", {"model": "Pegasus 40"}, "running_shoe_model", {"model": "Novablast 4"}),
        ("fitness_goal", {"goal": "run a marathon"}, "training_goal", {"goal": "lose 5 kg"}),
        ("tennis_club", {"name": "CIF"}, "tennis_club_name", {"name": "Estoril TC"}),
        ("swim_100m_best", {"time": "1:35"}, "best_100m_swim_time", {"seconds": 92}),
    ),
    "devices_accounts": (
        ("phone_model", {"model": "iPhone 13"}, "smartphone_model", {"model": "Pixel 8"}, _R),
        ("laptop_model", {"model": "ThinkPad X1"}, "laptop", {"model": "MacBook Air"}),
        ("operating_system", {"name": "Linux"}, "os", {"os": "macOS"}, _R),
        ("preferred_browser", {"name": "Firefox"}, "default_browser", {"browser": "Chrome"}),
        ("github_username", {"username": "alice"}, "github_handle", {"handle": "alicem"}),
        (
            "smartwatch",
            {"model": "Forerunner 255"},
            "smart_watch_model",
            {"model": "Apple Watch 9"},
        ),
        ("tablet_model", {"model": "iPad Air"}, "tablet", {"device": "Galaxy Tab S9"}),
        ("mobile_carrier", {"name": "Vodafone"}, "phone_carrier", {"carrier": "MEO"}),
        ("isp", {"name": "NOS"}, "internet_provider", {"provider": "MEO"}),
        ("wifi_network_name", {"ssid": "home-5g"}, "wifi_ssid", {"ssid": "casa"}),
        ("number_of_monitors", {"count": 2}, "monitor_count", {"count": 3}),
        ("headphones", {"model": "WH-1000XM5"}, "headphone_model", {"model": "AirPods Pro"}),
        ("keyboard_layout", {"layout": "US"}, "kb_layout", {"layout": "PT"}),
        ("password_manager", {"app": "Bitwarden"}, "password_manager_app", {"name": "1Password"}),
        ("cloud_storage_provider", {"name": "Dropbox"}, "cloud_storage", {"service": "iCloud"}),
        ("preferred_editor", {"editor": "vim"}, "code_editor", {"name": "VS Code"}),
        ("camera_model", {"model": "Fuji X-T4"}, "camera", {"model": "Sony A7 IV"}),
    ),
    "education": (
        ("university", {"name": "University of Porto"}, "alma_mater", {"name": "IST Lisbon"}, _R),
        ("highest_degree", {"degree": "BSc"}, "highest_qualification", {"level": "MSc"}),
        ("field_of_study", {"field": "biology"}, "major", {"subject": "chemistry"}, _R),
        ("graduation_year", {"year": 2012}, "year_of_graduation", {"year": 2013}),
        ("high_school", {"name": "Liceu Camões"}, "secondary_school", {"name": "Escola D. Maria"}),
        ("gpa", {"value": 3.6}, "grade_point_average", {"value": 3.7}),
        ("thesis_topic", {"topic": "graph databases"}, "dissertation_topic", {"topic": "search"}),
        ("phd_advisor", {"name": "Prof. Lima"}, "doctoral_supervisor", {"name": "Prof. Reis"}),
        ("current_course", {"name": "Spanish B1"}, "enrolled_course", {"course": "Spanish B2"}),
        ("student_id", {"id": "S123"}, "student_number", {"number": "S456"}),
        ("minor", {"subject": "economics"}, "minor_subject", {"field": "philosophy"}),
        ("certification", {"name": "AWS SAA"}, "certifications", {"names": ["AWS SAA", "CKA"]}),
        ("school_year", {"grade": 10}, "grade_level", {"grade": 11}),
        ("university_start_year", {"year": 2008}, "year_started_university", {"year": 2009}),
    ),
    "travel": (
        (
            "passport_issuing_country",
            {"country": "Portugal"},
            "passport_country",
            {"country": "Ireland"},
        ),
        (
            "passport_expiry",
            {"date": "2029-05-01"},
            "passport_expiration_date",
            {"date": "2030-01-12"},
            _R,
        ),
        ("frequent_flyer_number", {"number": "TP123"}, "ff_number", {"number": "TP456"}),
        ("preferred_airline", {"airline": "TAP"}, "favorite_airline", {"name": "KLM"}),
        ("seat_preference", {"seat": "aisle"}, "preferred_seat", {"seat": "window"}, _R),
        ("countries_visited", {"count": 23}, "number_of_countries_visited", {"count": 25}),
        (
            "next_trip_destination",
            {"city": "Tokyo"},
            "upcoming_trip_destination",
            {"place": "Osaka"},
        ),
        ("next_trip_date", {"date": "2027-03-10"}, "upcoming_trip_date", {"start": "2027-03-12"}),
        (
            "hotel_loyalty_program",
            {"program": "Marriott Bonvoy"},
            "hotel_rewards_program",
            {"name": "Hilton Honors"},
        ),
        (
            "dream_destination",
            {"place": "Patagonia"},
            "bucket_list_destination",
            {"place": "Iceland"},
        ),
        ("visa_type", {"type": "D7"}, "type_of_visa", {"type": "work"}),
        ("travel_frequency", {"trips_per_year": 6}, "trips_per_year", {"count": 8}),
        ("home_airport", {"code": "LIS"}, "local_airport", {"code": "OPO"}),
        ("known_traveler_number", {"ktn": "123"}, "ktn", {"value": "456"}),
    ),
    "schedule_locale": (
        ("timezone", {"tz": "Europe/Lisbon"}, "time_zone", {"tz": "Europe/London"}),
        ("tz", {"name": "Europe/Lisbon"}, "local_timezone", {"iana": "America/New_York"}),
        (
            "native_language",
            {"language": "Portuguese"},
            "mother_tongue",
            {"language": "Galician"},
            _R,
        ),
        ("preferred_language", {"language": "English"}, "language_preference", {"lang": "French"}),
        (
            "languages_spoken",
            {"languages": ["pt", "en"]},
            "spoken_languages",
            {"languages": ["pt", "en", "es"]},
            _R,
        ),
        ("wake_up_time", {"time": "07:00"}, "wakeup_time", {"time": "06:30"}),
        ("bedtime", {"time": "23:00"}, "usual_bed_time", {"time": "22:30"}),
        (
            "date_format",
            {"format": "DD/MM/YYYY"},
            "preferred_date_format",
            {"format": "YYYY-MM-DD"},
        ),
        ("measurement_system", {"system": "metric"}, "unit_system", {"system": "imperial"}),
        ("lunch_time", {"time": "12:30"}, "usual_lunch_time", {"time": "13:00"}),
        ("day_off", {"day": "Friday"}, "weekly_day_off", {"day": "Monday"}),
        ("meeting_free_day", {"day": "Wednesday"}, "no_meeting_day", {"weekday": "Thursday"}),
        ("locale", {"value": "pt_PT"}, "locale_setting", {"value": "en_GB"}),
        ("first_day_of_week", {"day": "Monday"}, "week_start_day", {"day": "Sunday"}),
        ("preferred_currency", {"code": "EUR"}, "currency_preference", {"currency": "GBP"}),
        ("time_format", {"format": "24h"}, "clock_format", {"hours": 12}),
    ),
    "finance": (
        ("bank", {"name": "CGD"}, "bank_name", {"bank": "Millennium"}),
        (
            "monthly_rent",
            {"amount": 1200, "currency": "EUR"},
            "rent_per_month",
            {"amount": 1250, "currency": "EUR"},
            _R,
        ),
        ("monthly_budget", {"amount": 2000}, "budget_per_month", {"amount": 2200}),
        ("savings_goal", {"amount": 10000}, "saving_target", {"amount": 15000}),
        ("credit_score", {"score": 720}, "fico_score", {"score": 740}),
        ("annual_income", {"amount": 60000}, "yearly_income", {"amount": 65000}),
        ("net_worth", {"amount": 150000}, "networth", {"amount": 160000}),
        ("mortgage_rate", {"percent": 3.2}, "mortgage_interest_rate", {"rate": 3.5}),
        ("mortgage_monthly_payment", {"amount": 800}, "monthly_mortgage_payment", {"amount": 820}),
        ("pension_fund", {"provider": "Alves Ribeiro"}, "pension_provider", {"name": "BPI"}),
        ("investment_broker", {"name": "Degiro"}, "brokerage", {"name": "Interactive Brokers"}),
        ("emergency_fund_months", {"months": 6}, "months_of_emergency_fund", {"months": 4}),
        ("tax_residence", {"country": "Portugal"}, "tax_residency", {"country": "Spain"}, _R),
        ("primary_credit_card", {"card": "Visa Gold"}, "main_credit_card", {"card": "Amex Gold"}),
        ("monthly_savings", {"amount": 500}, "amount_saved_per_month", {"amount": 600}),
        ("iban", {"value": "PT50 0002 0123"}, "bank_account_iban", {"iban": "PT50 0035 0456"}),
        ("student_loan_balance", {"amount": 12000}, "student_debt", {"amount": 11000}),
    ),
    "vehicles": (
        ("car_model", {"model": "Toyota Corolla"}, "vehicle_model", {"model": "Honda Civic"}),
        ("car_make", {"make": "Toyota"}, "car_brand", {"brand": "Honda"}),
        ("bike_count", {"count": 3}, "bikes_owned", {"count": 4}, _R),
        ("num_bikes", {"n": 2}, "number_of_bicycles", {"count": 3}),
        ("license_plate", {"plate": "AA-00-BB"}, "number_plate", {"plate": "CC-11-DD"}, _R),
        ("car_color", {"color": "red"}, "car_colour", {"colour": "blue"}),
        ("car_year", {"year": 2015}, "car_model_year", {"year": 2018}),
        ("odometer_km", {"km": 85000}, "car_mileage", {"value": 91000, "unit": "km"}),
        (
            "drivers_license_number",
            {"number": "L-123"},
            "driving_licence_number",
            {"number": "L-456"},
        ),
        ("motorcycle", {"model": "Honda CB500"}, "motorbike_model", {"model": "Yamaha MT-07"}),
        ("number_of_cars", {"count": 1}, "car_count", {"count": 2}),
        ("car_insurance_provider", {"name": "Fidelidade"}, "auto_insurer", {"company": "Allianz"}),
        ("fuel_type", {"type": "diesel"}, "car_fuel_type", {"fuel": "electric"}),
        ("ev_range_km", {"km": 400}, "electric_car_range", {"km": 420}),
        ("parking_spot", {"number": "B12"}, "parking_space_number", {"number": "C3"}),
        ("e_bike_model", {"model": "VanMoof S5"}, "ebike_model", {"model": "Cowboy 4"}),
    ),
    "measurements": (
        ("height", {"cm": 172}, "height_cm", {"cm": 173}),
        ("weight_kg", {"kg": 68}, "body_weight", {"value": 70, "unit": "kg"}),
        ("weight", {"lbs": 150}, "body_weight_lbs", {"lbs": 155}),
        ("weight", {"lbs": 150}, "weight_kg", {"kg": 67}),
        ("shoe_size", {"eu": 42}, "shoe_size_eu", {"size": 43}),
        ("waist_size", {"inches": 32}, "waist_circumference_cm", {"cm": 81}),
        ("tshirt_size", {"size": "M"}, "t_shirt_size", {"size": "L"}, _R),
        ("dress_size", {"uk": 10}, "dress_size_uk", {"size": 12}),
        ("ring_size", {"size": "N"}, "ring_size_us", {"size": 7}),
        ("body_fat_percentage", {"percent": 18}, "body_fat_pct", {"pct": 17}, _R),
        ("bmi", {"value": 22.5}, "body_mass_index", {"value": 23.1}),
        ("inseam_length", {"in": 32}, "inseam", {"inches": 31}),
        ("stature", {"cm": 170}, "height_in_cm", {"cm": 171}),
        ("neck_size", {"cm": 40}, "collar_size", {"in": 16}),
    ),
    "contact": (
        (
            "email",
            {"address": "alice@example.com"},
            "email_address",
            {"address": "am@example.com"},
            _R,
        ),
        (
            "e_mail_address",
            {"value": "alice@example.org"},
            "email_addr",
            {"email": "a@example.net"},
        ),
        (
            "phone_number",
            {"number": "+351 912 345 678"},
            "mobile_number",
            {"number": "+351 913 000 111"},
            _R,
        ),
        ("cell_phone", {"number": "+1 555 0100"}, "mobile_phone", {"number": "+1 555 0199"}),
        (
            "postal_address",
            {"line1": "12 Rua Augusta", "city": "Lisbon"},
            "mailing_address",
            {"street": "PO Box 12", "city": "Porto"},
        ),
        (
            "linkedin_url",
            {"url": "https://linkedin.com/in/alice"},
            "linkedin_profile",
            {"url": "https://linkedin.com/in/alicem"},
        ),
        ("instagram_handle", {"handle": "@alice"}, "ig_username", {"username": "@alice.m"}),
        (
            "website",
            {"url": "https://alice.dev"},
            "personal_website",
            {"url": "https://alicem.dev"},
        ),
        (
            "emergency_contact",
            {"name": "Sam", "phone": "+351 910 000 001"},
            "emergency_contact_person",
            {"name": "Rita", "phone": "+351 910 000 002"},
        ),
        ("discord_username", {"username": "alice#1"}, "discord_handle", {"handle": "alicem"}),
        ("telegram_handle", {"handle": "@alice"}, "telegram_username", {"username": "@alice_m"}),
        ("preferred_contact_method", {"method": "email"}, "contact_preference", {"channel": "sms"}),
        (
            "work_phone",
            {"number": "+351 210 000 100"},
            "office_phone_number",
            {"number": "+351 210 000 200"},
        ),
        (
            "work_email",
            {"address": "a@acme.com"},
            "work_email_address",
            {"address": "alice@acme.com"},
        ),
        ("twitter_handle", {"handle": "@alice"}, "x_username", {"username": "@alice_m"}),
    ),
    "identity": (
        ("date_of_birth", {"date": "1990-04-12"}, "dob", {"date": "1990-04-21"}, _R),
        ("birth_date", {"date": "1990-04-12"}, "date_of_birth", {"value": "1990-04-13"}),
        ("birthday", {"date": "04-12"}, "birth_date", {"date": "1990-04-12"}),
        ("age", {"years": 34}, "age_years", {"years": 35}, _R),
        ("age_in_years", {"value": 35}, "years_old", {"value": 36}),
        ("age", {"years": 34}, "current_age", {"age": "35"}),
        ("full_name", {"name": "Alice Martin"}, "name", {"full": "Alice Martin-Reis"}),
        ("first_name", {"name": "Alice"}, "given_name", {"name": "Alicia"}, _R),
        ("last_name", {"name": "Martin"}, "surname", {"name": "Reis"}),
        ("surname", {"name": "Reis"}, "family_name", {"value": "Martin"}),
        ("nickname", {"name": "Ali"}, "preferred_name", {"name": "Lis"}),
        ("nationality", {"country": "Portuguese"}, "citizenship", {"country": "French"}),
        ("pronouns", {"pronouns": "she/her"}, "preferred_pronouns", {"value": "they/them"}, _R),
        ("gender", {"value": "female"}, "gender_identity", {"value": "non-binary"}),
        ("zodiac_sign", {"sign": "Aries"}, "star_sign", {"sign": "Taurus"}),
        ("religion", {"name": "Catholic"}, "religious_affiliation", {"name": "none"}),
        ("place_of_birth", {"city": "Coimbra"}, "birthplace", {"city": "Braga"}),
        ("birth_city", {"city": "Coimbra"}, "city_of_birth", {"name": "Aveiro"}),
        ("maiden_name", {"name": "Silva"}, "birth_surname", {"name": "Sousa"}),
        ("national_id_number", {"number": "12345678"}, "national_id", {"id": "87654321"}),
        ("mbti", {"type": "INTJ"}, "myers_briggs_type", {"type": "ENFP"}),
    ),
}

_DIFFERENT_ROWS: dict[str, tuple[_Row, ...]] = {
    "home_location": (
        ("home_city", {"city": "Lisbon"}, "work_city", {"city": "Lisbon"}),
        ("birth_city", {"city": "Coimbra"}, "current_city", {"city": "Lisbon"}),
        (
            "home_address",
            {"street": "12 Rua Augusta", "city": "Lisbon"},
            "work_address",
            {"street": "1 Praça do Comércio", "city": "Lisbon"},
        ),
        ("home_country", {"value": "Portugal"}, "country_of_birth", {"country": "Angola"}),
        ("hometown", {"town": "Coimbra"}, "home_city", {"city": "Lisbon"}),
        ("previous_city", {"city": "Berlin"}, "current_city", {"city": "Lisbon"}),
        (
            "previous_address",
            {"street": "3 Hauptstraße", "city": "Berlin"},
            "home_address",
            {"street": "12 Rua Augusta", "city": "Lisbon"},
        ),
        ("number_of_bedrooms", {"count": 2}, "number_of_bathrooms", {"count": 2}),
        ("holiday_home_location", {"city": "Lagos"}, "home_city", {"city": "Lisbon"}),
        ("zip_code", {"code": "1100-148"}, "area_code", {"value": "21"}),
        ("commute_distance_km", {"km": 12}, "commute_time_minutes", {"minutes": 30}),
        ("home_latitude", {"value": 38.71}, "home_longitude", {"value": -9.14}),
        ("floor_number", {"floor": 3}, "building_floors", {"count": 8}),
        ("city_of_residence", {"city": "Portland"}, "state_of_residence", {"state": "Oregon"}),
        ("lease_start_date", {"date": "2023-09-01"}, "lease_end_date", {"date": "2025-08-31"}),
        ("moved_in_date", {"date": "2021-03-01"}, "move_out_date", {"date": "2024-02-28"}),
        ("neighbourhood", {"value": "Alfama"}, "neighbour_name", {"name": "Mrs Costa"}),
        ("home_square_meters", {"m2": 80}, "garden_square_meters", {"m2": 30}),
    ),
    "work": (
        ("current_employer", {"name": "Acme"}, "former_employer", {"name": "Globex"}),
        ("employer", {"company": "Acme"}, "previous_employer", {"company": "Globex"}),
        ("job_title", {"value": "engineer"}, "desired_job_title", {"title": "architect"}),
        ("manager_name", {"name": "Bob Stone"}, "mentor_name", {"name": "Eve Park"}),
        ("annual_salary", {"value": 85000}, "annual_bonus", {"amount": 8000}),
        ("job_start_date", {"value": "2020-01-06"}, "job_end_date", {"date": "2023-12-22"}),
        ("work_start_time", {"time": "09:00"}, "work_end_time", {"time": "17:30"}),
        ("team_name", {"name": "Payments"}, "team_size", {"count": 8}),
        ("years_of_experience", {"years": 7}, "years_at_company", {"years": 3}),
        ("direct_reports_count", {"count": 3}, "team_size", {"count": 8}),
        ("employee_id", {"id": "E1234"}, "tax_id", {"id": "PT123456789"}),
        ("occupation", {"value": "nurse"}, "side_hustle", {"activity": "wedding photography"}),
        ("weekly_working_hours", {"hours": 40}, "weekly_overtime_hours", {"hours": 5}),
        ("notice_period_weeks", {"weeks": 4}, "probation_period_months", {"months": 6}),
        ("department", {"name": "Engineering"}, "company_size", {"employees": 200}),
        ("current_project", {"name": "Atlas"}, "previous_project", {"value": "Hermes"}),
        ("remote_work_days", {"days": 2}, "office_days", {"days": 3}),
        ("work_anniversary", {"date": "01-06"}, "wedding_anniversary", {"value": "06-30"}),
        ("job_title", {"value": "engineer"}, "manager_job_title", {"title": "director"}),
        ("employer", {"name": "Acme"}, "spouse_employer", {"value": "Globex"}),
    ),
    "family": (
        ("mother_name", {"name": "Maria"}, "father_name", {"value": "José"}),
        ("number_of_children", {"count": 2}, "number_of_siblings", {"count": 2}),
        ("son_name", {"name": "Tom"}, "daughter_name", {"name": "Ana"}),
        ("spouse_name", {"value": "Sam"}, "ex_spouse_name", {"name": "Chris"}),
        ("brother_name", {"value": "Rui"}, "sister_name", {"name": "Inês"}),
        ("wedding_date", {"value": "2018-06-30"}, "birth_date", {"date": "1990-04-12"}),
        ("eldest_child_name", {"name": "Ana"}, "youngest_child_name", {"name": "Leo"}),
        ("daughter_age", {"years": 5}, "son_age", {"value": 8}),
        ("mother_birthday", {"date": "03-14"}, "father_birthday", {"date": "11-02"}),
        ("grandmother_name", {"name": "Rosa"}, "grandfather_name", {"name": "Manuel"}),
        ("mother_maiden_name", {"name": "Sousa"}, "mother_name", {"name": "Maria Silva"}),
        ("spouse_name", {"name": "Sam"}, "best_friend_name", {"value": "Joana"}),
        ("number_of_grandchildren", {"value": 4}, "number_of_children", {"count": 2}),
        ("spouse_job", {"title": "nurse"}, "job_title", {"title": "engineer"}),
        ("nephew_name", {"name": "Duarte"}, "niece_name", {"value": "Beatriz"}),
        ("father_age", {"years": 66}, "mother_age", {"years": 63}),
        ("wedding_anniversary", {"date": "06-30"}, "engagement_date", {"date": "2017-12-24"}),
        ("in_laws_city", {"city": "Braga"}, "parents_city", {"city": "Faro"}),
        ("relationship_status", {"status": "married"}, "relationship_length_years", {"years": 9}),
        ("children_names", {"names": ["Ana", "Rui"]}, "stepchildren_names", {"value": ["Tiago"]}),
    ),
    "pets": (
        ("dog_name", {"name": "Rex"}, "cat_name", {"value": "Luna"}),
        ("dog_count", {"count": 1}, "cat_count", {"count": 1}),
        ("dog_breed", {"value": "beagle"}, "cat_breed", {"breed": "siamese"}),
        ("dog_age", {"years": 4}, "cat_age", {"years": 9}),
        ("pet_name", {"name": "Biscuit"}, "vet_name", {"name": "Dr. Reis"}),
        ("dog_weight_kg", {"kg": 12}, "weight_kg", {"kg": 68}),
        ("first_pet_name", {"name": "Bolinhas"}, "pet_name", {"value": "Biscuit"}),
        ("dog_birthday", {"date": "2020-05-01"}, "birthday", {"date": "1990-04-12"}),
        ("dog_walker_name", {"value": "Pedro"}, "dog_name", {"name": "Rex"}),
        ("pet_food_brand", {"brand": "Royal Canin"}, "cat_litter_brand", {"brand": "Catsan"}),
        ("horse_name", {"value": "Star"}, "dog_name", {"name": "Rex"}),
        ("fish_count", {"count": 5}, "aquarium_size_liters", {"liters": 120}),
        ("pet_species", {"species": "dog"}, "allergic_to_pets", {"value": True}),
        (
            "pet_insurance_provider",
            {"value": "Petplan"},
            "health_insurance_provider",
            {"name": "Medis"},
        ),
        ("previous_dog_name", {"name": "Bobi"}, "dog_name", {"name": "Rex"}),
        ("number_of_pets", {"value": 2}, "number_of_plants", {"count": 12}),
    ),
    "health": (
        ("allergies", {"items": ["penicillin"]}, "medications", {"items": ["ibuprofen"]}),
        ("food_allergies", {"items": ["peanuts"]}, "disliked_foods", {"items": ["olives"]}),
        ("dietary_preference", {"value": "vegetarian"}, "allergies", {"name": "peanuts"}),
        ("blood_type", {"type": "A+"}, "blood_pressure", {"systolic": 120, "diastolic": 80}),
        ("resting_heart_rate", {"bpm": 58}, "max_heart_rate", {"value": 185}),
        ("systolic_pressure", {"value": 120}, "diastolic_pressure", {"mmhg": 80}),
        ("doctor_name", {"name": "Dr. Costa"}, "dentist_name", {"name": "Dr. Melo"}),
        ("sleep_goal_hours", {"hours": 8}, "sleep_hours", {"hours": 6}),
        (
            "smoking_status",
            {"value": "non-smoker"},
            "drinking_habits",
            {"status": "social drinker"},
        ),
        ("medication", {"name": "metformin"}, "medication_dosage", {"mg": 500}),
        (
            "chronic_conditions",
            {"value": ["asthma"]},
            "family_medical_history",
            {"conditions": ["diabetes"]},
        ),
        ("covid_vaccine_doses", {"count": 3}, "flu_vaccine_date", {"date": "2026-10-02"}),
        ("lactose_intolerant", {"value": True}, "gluten_intolerant", {"value": False}),
        ("coffee_cups_per_day", {"cups": 3}, "water_liters_per_day", {"liters": 2}),
        (
            "health_insurance_provider",
            {"name": "Medis"},
            "dental_insurance_provider",
            {"value": "Medis"},
        ),
        ("therapist_name", {"name": "Dr. Vaz"}, "physiotherapist_name", {"value": "Nuno"}),
        ("left_eye_prescription", {"value": -1.5}, "right_eye_prescription", {"diopters": -1.75}),
        ("last_checkup_date", {"date": "2026-03-02"}, "next_checkup_date", {"date": "2027-03-01"}),
        ("calorie_target", {"kcal": 2000}, "protein_target_g", {"g": 120}),
        ("diet", {"type": "keto"}, "diet_start_date", {"date": "2026-01-05"}),
    ),
    "preferences": (
        ("favorite_color", {"name": "green"}, "favorite_food", {"value": "sushi"}),
        ("favorite_food", {"food": "sushi"}, "disliked_food", {"value": "olives"}),
        ("favorite_movie", {"value": "Spirited Away"}, "favorite_book", {"title": "Dune"}),
        ("favorite_band", {"name": "Radiohead"}, "favorite_song", {"title": "Karma Police"}),
        ("favorite_drink", {"drink": "coffee"}, "favorite_dessert", {"dessert": "pastel de nata"}),
        ("favorite_season", {"season": "autumn"}, "favorite_month", {"month": "October"}),
        ("favorite_author", {"name": "Le Guin"}, "favorite_actor", {"name": "Tilda Swinton"}),
        ("favorite_cuisine", {"cuisine": "Thai"}, "least_favorite_cuisine", {"cuisine": "British"}),
        ("favorite_tv_show", {"title": "The Wire"}, "favorite_podcast", {"name": "Radiolab"}),
        ("coffee_order", {"order": "flat white"}, "tea_preference", {"tea": "green"}),
        ("favorite_sports_team", {"team": "FC Porto"}, "favorite_sport", {"sport": "football"}),
        ("ui_theme", {"value": "dark"}, "font_size", {"value": "large"}),
        ("favorite_flower", {"name": "tulip"}, "favorite_fruit", {"name": "mango"}),
        ("favorite_restaurant", {"name": "Ramiro"}, "favorite_bar", {"name": "Park"}),
        ("favorite_city", {"value": "Paris"}, "home_city", {"city": "Lisbon"}),
        (
            "favorite_holiday",
            {"holiday": "Christmas"},
            "favorite_holiday_destination",
            {"place": "Azores"},
        ),
        ("preferred_music_genre", {"genre": "jazz"}, "preferred_movie_genre", {"genre": "noir"}),
        ("favorite_fruit", {"fruit": "mango"}, "favorite_vegetable", {"vegetable": "kale"}),
        (
            "preferred_temperature_unit",
            {"unit": "celsius"},
            "preferred_distance_unit",
            {"unit": "km"},
        ),
        ("favorite_color", {"color": "green"}, "car_color", {"color": "red"}),
        ("favorite_movie", {"title": "Alien"}, "last_movie_watched", {"title": "Dune"}),
    ),
    "hobbies": (
        ("instrument_played", {"value": "piano"}, "instrument_learning", {"name": "violin"}),
        ("chess_rating", {"elo": 1650}, "chess_puzzle_rating", {"rating": 2100}),
        ("books_read_this_year", {"value": 12}, "books_read_last_year", {"count": 20}),
        ("reading_goal_books", {"count": 24}, "books_read_this_year", {"count": 12}),
        ("favorite_video_game", {"value": "Zelda"}, "favorite_board_game", {"title": "Catan"}),
        ("hours_gaming_per_week", {"hours": 6}, "hours_reading_per_week", {"hours": 4}),
        ("book_club_name", {"name": "Page Turners"}, "book_club_meeting_day", {"day": "Tuesday"}),
        (
            "volunteer_organization",
            {"name": "Red Cross"},
            "volunteer_hours_per_month",
            {"hours": 8},
        ),
        ("dance_style", {"style": "salsa"}, "painting_style", {"style": "watercolour"}),
        ("instrument_years", {"years": 5}, "years_painting", {"years": 2}),
        ("stamps_collected", {"value": 300}, "coins_collected", {"count": 120}),
        ("houseplant_count", {"value": 14}, "outdoor_plant_count", {"count": 6}),
        ("current_book", {"title": "Dune"}, "favorite_book", {"title": "Emma"}),
        ("last_book_read", {"title": "Dune"}, "next_book_to_read", {"title": "Hyperion"}),
        ("lego_sets_owned", {"count": 30}, "number_of_board_games", {"value": 40}),
        ("crossword_streak_days", {"days": 40}, "duolingo_streak_days", {"value": 300}),
        ("hobbies", {"items": ["chess"]}, "skills", {"items": ["welding"]}),
    ),
    "fitness": (
        ("personal_best_5k", {"time": "22:30"}, "personal_best_10k", {"value": "47:10"}),
        ("half_marathon_pb", {"time": "1:45:00"}, "marathon_pb", {"time": "3:45:10"}),
        ("bench_press_max", {"kg": 80}, "squat_max", {"kg": 120}),
        ("deadlift_1rm_kg", {"kg": 140}, "deadlift_5rm_kg", {"value": 120}),
        ("weekly_running_distance", {"km": 30}, "weekly_cycling_distance", {"value": 120}),
        ("daily_step_goal", {"steps": 10000}, "daily_steps_average", {"value": 7500}),
        ("vo2_max", {"value": 48}, "resting_heart_rate", {"bpm": 58}),
        ("gym_name", {"name": "Fitness Hut"}, "climbing_gym_name", {"value": "Vertigo"}),
        ("marathon_pr", {"time": "3:45:10"}, "marathon_count", {"count": 3}),
        ("cycling_ftp", {"watts": 250}, "max_power_watts", {"watts": 900}),
        ("swim_100m_best", {"time": "1:35"}, "swim_200m_best", {"time": "3:25"}),
        ("running_shoes", {"model": "Pegasus 40"}, "hiking_boots", {"model": "Salomon X Ultra"}),
        ("fitness_goal", {"goal": "run a marathon"}, "fitness_level", {"level": "intermediate"}),
        ("tennis_club", {"name": "CIF"}, "golf_club", {"value": "Penha Longa"}),
        ("longest_run_km", {"value": 32}, "weekly_running_distance", {"km": 35}),
        ("plank_record_seconds", {"seconds": 180}, "wall_sit_record_seconds", {"seconds": 120}),
        ("golf_handicap", {"handicap": 18}, "golf_best_score", {"value": 79}),
        ("row_2k_time", {"time": "7:45"}, "row_5k_time", {"value": "20:10"}),
        ("zone_2_heart_rate", {"bpm": 130}, "zone_4_heart_rate", {"value": 165}),
        ("pb_5k", {"time": "21:58"}, "pb_5k_date", {"date": "2026-04-12"}),
    ),
    "devices_accounts": (
        ("phone_model", {"model": "iPhone 13"}, "laptop_model", {"model": "ThinkPad X1"}),
        ("phone_model", {"model": "iPhone 13"}, "phone_number", {"number": "+351 912 345 678"}),
        ("laptop_os", {"value": "Linux"}, "phone_os", {"os": "Android"}),
        ("github_username", {"username": "alice"}, "gitlab_username", {"username": "alice"}),
        ("wifi_ssid", {"ssid": "casa"}, "router_model", {"model": "Fritzbox 7590"}),
        ("number_of_monitors", {"count": 2}, "monitor_size_inches", {"inches": 27}),
        ("headphone_model", {"model": "WH-1000XM5"}, "microphone_model", {"model": "Shure MV7"}),
        ("keyboard_layout", {"layout": "US"}, "keyboard_model", {"model": "Keychron K2"}),
        ("password_manager", {"app": "Bitwarden"}, "two_factor_app", {"app": "Aegis"}),
        ("preferred_browser", {"value": "Firefox"}, "search_engine", {"name": "DuckDuckGo"}),
        ("smartwatch_model", {"value": "Garmin 255"}, "smart_speaker_model", {"model": "Echo Dot"}),
        ("tablet_model", {"model": "iPad Air"}, "e_reader_model", {"model": "Kindle Paperwhite"}),
        ("mobile_carrier", {"value": "Vodafone"}, "isp", {"name": "NOS"}),
        ("daily_screen_time_hours", {"hours": 5}, "sleep_hours", {"hours": 7}),
        ("phone_storage_gb", {"gb": 256}, "laptop_ram_gb", {"gb": 16}),
        ("old_phone_model", {"model": "iPhone 8"}, "phone_model", {"model": "iPhone 13"}),
        ("work_laptop", {"model": "Dell XPS 13"}, "personal_laptop", {"value": "MacBook Air"}),
        ("code_editor", {"name": "VS Code"}, "terminal_emulator", {"name": "kitty"}),
        ("cloud_storage", {"service": "iCloud"}, "cloud_storage_used_gb", {"gb": 180}),
        ("github_username", {"username": "alice"}, "github_followers", {"count": 120}),
    ),
    "education": (
        ("university", {"value": "University of Porto"}, "high_school", {"name": "Liceu"}),
        ("bachelors_university", {"name": "U. Porto"}, "masters_university", {"name": "IST"}),
        ("graduation_year", {"year": 2012}, "enrollment_year", {"year": 2008}),
        ("major", {"value": "biology"}, "minor", {"subject": "economics"}),
        ("gpa", {"value": 3.6}, "sat_score", {"score": 1420}),
        ("masters_thesis_topic", {"topic": "graphs"}, "phd_thesis_topic", {"topic": "search"}),
        ("phd_advisor", {"name": "Prof. Lima"}, "favorite_teacher", {"name": "Mr. Nunes"}),
        (
            "current_course",
            {"course": "Spanish B2"},
            "completed_courses",
            {"courses": ["Spanish B1"]},
        ),
        ("student_id", {"id": "S123"}, "library_card_number", {"value": "L987"}),
        (
            "aws_certification",
            {"level": "associate"},
            "azure_certification",
            {"value": "fundamentals"},
        ),
        ("school_year", {"grade": 10}, "school_name", {"name": "Escola Básica"}),
        (
            "high_school_graduation_year",
            {"year": 2008},
            "university_graduation_year",
            {"year": 2012},
        ),
        ("university_start_year", {"year": 2008}, "university_end_year", {"year": 2012}),
        ("highest_degree", {"degree": "MSc"}, "first_degree", {"value": "BSc"}),
        ("english_level", {"value": "C1"}, "spanish_level", {"level": "B1"}),
        ("ielts_score", {"score": 7.5}, "toefl_score", {"score": 105}),
        ("field_of_study", {"value": "biology"}, "field_of_work", {"field": "pharma"}),
    ),
    "travel": (
        ("passport_expiry", {"date": "2029-05-01"}, "passport_issue_date", {"date": "2019-05-02"}),
        ("passport_number", {"number": "CB123456"}, "id_card_number", {"value": "12345678"}),
        ("next_trip_destination", {"city": "Tokyo"}, "last_trip_destination", {"value": "Rome"}),
        (
            "next_trip_start_date",
            {"date": "2027-03-10"},
            "next_trip_end_date",
            {"value": "2027-03-24"},
        ),
        ("countries_visited", {"count": 23}, "countries_lived_in", {"count": 3}),
        ("preferred_airline", {"airline": "TAP"}, "airline_to_avoid", {"airline": "Ryanair"}),
        ("seat_preference", {"seat": "aisle"}, "meal_preference", {"meal": "vegetarian"}),
        ("frequent_flyer_number", {"number": "TP123"}, "frequent_flyer_status", {"tier": "Gold"}),
        ("dream_destination", {"place": "Patagonia"}, "honeymoon_destination", {"value": "Bali"}),
        ("home_airport", {"code": "LIS"}, "destination_airport", {"code": "NRT"}),
        (
            "hotel_loyalty_program",
            {"program": "Bonvoy"},
            "airline_loyalty_program",
            {"program": "Miles&Go"},
        ),
        ("trips_per_year", {"value": 8}, "business_trips_per_year", {"count": 3}),
        ("travel_budget", {"amount": 3000}, "vacation_days_remaining", {"days": 12}),
        ("vacation_days_per_year", {"days": 25}, "vacation_days_remaining", {"days": 12}),
        ("visa_expiry", {"date": "2027-08-01"}, "visa_type", {"type": "D7"}),
        ("home_timezone", {"tz": "Europe/Lisbon"}, "destination_timezone", {"tz": "Asia/Tokyo"}),
        ("timezone", {"value": "Europe/Lisbon"}, "travel_destination", {"name": "Tokyo"}),
    ),
    "schedule_locale": (
        ("wake_up_time", {"time": "07:00"}, "bedtime", {"time": "23:00"}),
        (
            "native_language",
            {"language": "Portuguese"},
            "learning_language",
            {"language": "German"},
        ),
        (
            "native_language",
            {"language": "Portuguese"},
            "preferred_language",
            {"language": "English"},
        ),
        (
            "languages_spoken",
            {"languages": ["pt", "en"]},
            "languages_learning",
            {"languages": ["de"]},
        ),
        ("weekday_wake_time", {"time": "06:30"}, "weekend_wake_time", {"value": "09:00"}),
        ("lunch_time", {"value": "12:30"}, "dinner_time", {"time": "20:00"}),
        ("day_off", {"value": "Friday"}, "meeting_free_day", {"day": "Wednesday"}),
        ("date_format", {"format": "DD/MM/YYYY"}, "time_format", {"format": "24h"}),
        ("first_day_of_week", {"day": "Monday"}, "weekly_review_day", {"day": "Friday"}),
        ("school_pickup_time", {"time": "16:30"}, "school_dropoff_time", {"value": "08:15"}),
        ("morning_routine_start", {"time": "06:00"}, "evening_routine_start", {"time": "21:30"}),
        ("commute_mode", {"mode": "bike"}, "commute_duration_minutes", {"minutes": 25}),
        ("quiet_hours_start", {"time": "22:00"}, "quiet_hours_end", {"value": "07:00"}),
        ("preferred_language", {"language": "English"}, "programming_language", {"value": "Rust"}),
        ("locale", {"value": "pt_PT"}, "keyboard_layout", {"layout": "PT"}),
        ("timezone", {"value": "Europe/Lisbon"}, "work_timezone", {"tz": "America/New_York"}),
    ),
    "finance": (
        ("monthly_rent", {"amount": 1200}, "monthly_mortgage_payment", {"value": 800}),
        ("annual_income", {"amount": 60000}, "annual_expenses", {"amount": 45000}),
        ("savings_goal", {"amount": 10000}, "current_savings", {"value": 6500}),
        ("credit_score", {"score": 720}, "credit_limit", {"amount": 5000}),
        ("primary_bank", {"name": "CGD"}, "savings_bank", {"name": "Openbank"}),
        ("net_income", {"amount": 42000}, "gross_income", {"amount": 60000}),
        ("mortgage_rate", {"percent": 3.2}, "savings_interest_rate", {"percent": 2.0}),
        ("tax_residence", {"country": "Portugal"}, "citizenship", {"country": "France"}),
        ("monthly_budget", {"amount": 2000}, "weekly_budget", {"amount": 450}),
        ("emergency_fund_months", {"months": 6}, "months_until_debt_free", {"months": 18}),
        ("credit_card_debt", {"value": 2000}, "student_loan_balance", {"amount": 12000}),
        ("investment_broker", {"name": "Degiro"}, "crypto_exchange", {"value": "Kraken"}),
        ("pension_contribution_percent", {"percent": 5}, "tax_rate_percent", {"value": 28}),
        ("min_monthly_payment", {"amount": 50}, "max_monthly_payment", {"value": 400}),
        ("iban", {"value": "PT50 0002 0123"}, "swift_code", {"code": "CGDIPTPL"}),
        ("rent_due_day", {"day": 1}, "payday", {"day": 25}),
        ("stock_portfolio_value", {"value": 30000}, "crypto_portfolio_value", {"amount": 2000}),
        ("electricity_bill_monthly", {"value": 60}, "internet_bill_monthly", {"amount": 35}),
        ("monthly_salary", {"amount": 3200}, "monthly_rent", {"value": 1200}),
    ),
    "vehicles": (
        ("bike_count", {"count": 3}, "car_count", {"value": 1}),
        ("car_model", {"model": "Toyota Corolla"}, "bike_model", {"model": "Brompton C Line"}),
        ("car_make", {"make": "Toyota"}, "car_model", {"model": "Corolla"}),
        ("license_plate", {"plate": "AA-00-BB"}, "vin", {"vin": "JT2AE09W"}),
        ("car_color", {"color": "red"}, "car_interior_color", {"color": "black"}),
        ("car_year", {"year": 2015}, "car_purchase_year", {"value": 2019}),
        (
            "drivers_license_number",
            {"number": "L-123"},
            "drivers_license_expiry",
            {"date": "2031-02-01"},
        ),
        ("motorcycle_model", {"model": "Honda CB500"}, "scooter_model", {"model": "Vespa GTS"}),
        (
            "car_insurance_provider",
            {"name": "Fidelidade"},
            "home_insurance_provider",
            {"name": "Fidelidade"},
        ),
        ("fuel_type", {"type": "diesel"}, "fuel_consumption_l_per_100km", {"liters": 5.5}),
        ("ev_range_km", {"km": 400}, "ev_battery_kwh", {"kwh": 64}),
        ("parking_spot_number", {"value": "B12"}, "locker_number", {"number": "B12"}),
        ("car_odometer_km", {"km": 85000}, "bike_odometer_km", {"km": 4200}),
        ("previous_car_model", {"model": "Fiat Punto"}, "car_model", {"model": "Toyota Corolla"}),
        ("tire_pressure_front", {"psi": 32}, "tire_pressure_rear", {"value": 35}),
        ("e_bike_model", {"model": "VanMoof S5"}, "road_bike_model", {"value": "Canyon Endurace"}),
        ("car_loan_balance", {"amount": 9000}, "car_value", {"amount": 14000}),
        ("number_of_cars", {"count": 1}, "number_of_parking_spaces", {"count": 2}),
    ),
    "measurements": (
        ("height_cm", {"cm": 172}, "weight_kg", {"kg": 68}),
        ("weight_kg", {"value": 68}, "target_weight_kg", {"kg": 65}),
        ("waist_circumference_cm", {"cm": 81}, "hip_circumference_cm", {"cm": 95}),
        ("body_fat_percentage", {"percent": 18}, "muscle_mass_percentage", {"percent": 40}),
        ("arm_span_cm", {"cm": 175}, "height_cm", {"cm": 172}),
        ("dress_size", {"size": "10"}, "shoe_size", {"size": "38"}),
        ("ring_size", {"size": "N"}, "wrist_size_cm", {"cm": 16}),
        ("bmi", {"value": 22.5}, "bmr", {"value": 1500}),
        ("birth_weight_kg", {"kg": 3.4}, "weight_kg", {"kg": 68}),
        ("son_height_cm", {"cm": 120}, "height_cm", {"value": 172}),
        ("inseam", {"inches": 32}, "sleeve_length", {"value": 34}),
        ("neck_size", {"cm": 40}, "chest_size", {"value": 98}),
        ("min_weight_this_year", {"kg": 66}, "max_weight_this_year", {"value": 71}),
        ("jacket_size", {"size": "M"}, "trouser_size", {"size": "32"}),
        ("hand_span_cm", {"cm": 21}, "foot_length_cm", {"cm": 26}),
        ("height", {"cm": 172}, "height_at_18", {"cm": 170}),
        ("shoe_size", {"eu": 42}, "glove_size", {"size": "L"}),
    ),
    "contact": (
        ("phone_home", {"value": "+351 210 000 001"}, "phone_work", {"number": "+351 210 000 002"}),
        ("email", {"value": "alice@example.com"}, "work_email", {"address": "a.martin@acme.com"}),
        ("university_email", {"address": "a@uni.pt"}, "personal_email", {"value": "a@example.com"}),
        (
            "home_address",
            {"street": "12 Rua Augusta", "city": "Lisbon"},
            "billing_address",
            {"street": "12 Rua Augusta", "city": "Lisbon"},
        ),
        (
            "emergency_contact_name",
            {"name": "Sam"},
            "emergency_contact_phone",
            {"number": "+351 910"},
        ),
        (
            "linkedin_url",
            {"value": "https://linkedin.com/in/a"},
            "github_url",
            {"url": "https://github.com/a"},
        ),
        ("instagram_handle", {"handle": "@alice"}, "tiktok_handle", {"handle": "@alice"}),
        ("phone_number", {"number": "+351 912 345 678"}, "fax_number", {"value": "+351 213 000"}),
        (
            "mobile_number",
            {"value": "+351 912 345 678"},
            "landline_number",
            {"number": "+351 213 000 000"},
        ),
        ("website", {"url": "https://alice.dev"}, "blog_url", {"url": "https://alice.dev/blog"}),
        ("discord_username", {"username": "alicem"}, "steam_username", {"username": "alicem"}),
        (
            "mailing_address",
            {"street": "PO Box 12", "city": "Porto"},
            "shipping_address",
            {"street": "5 Rua Nova", "city": "Porto"},
        ),
        ("work_phone", {"number": "+351 210 000 100"}, "work_phone_extension", {"ext": "214"}),
        (
            "primary_phone",
            {"number": "+351 912 000 001"},
            "secondary_phone",
            {"value": "+351 913 000 002"},
        ),
        (
            "partner_phone_number",
            {"value": "+351 914 000 003"},
            "phone_number",
            {"number": "+351 912 345 678"},
        ),
        ("email", {"address": "alice@example.com"}, "email_notifications", {"enabled": True}),
    ),
    "identity": (
        ("first_name", {"name": "Alice"}, "last_name", {"name": "Martin"}),
        ("first_name", {"name": "Alice"}, "middle_name", {"value": "Maria"}),
        ("date_of_birth", {"date": "1990-04-12"}, "name_day", {"date": "1990-07-26"}),
        ("age", {"years": 34}, "birth_year", {"year": 1990}),
        ("nationality", {"value": "Portuguese"}, "ethnicity", {"value": "Mixed"}),
        ("full_name", {"value": "Alice Martin"}, "maiden_name", {"name": "Alice Silva"}),
        ("nickname", {"name": "Ali"}, "childhood_nickname", {"value": "Lili"}),
        ("pronouns", {"value": "she/her"}, "gender", {"value": "female"}),
        ("zodiac_sign", {"value": "Aries"}, "chinese_zodiac_sign", {"sign": "Horse"}),
        ("age", {"years": 34}, "retirement_age", {"years": 67}),
        ("religion", {"name": "Catholic"}, "political_affiliation", {"value": "Green"}),
        ("place_of_birth", {"city": "Coimbra"}, "place_of_residence", {"value": "Lisbon"}),
        ("national_id", {"id": "12345678"}, "tax_id", {"id": "PT123456789"}),
        ("mbti", {"type": "INTJ"}, "enneagram_type", {"type": "5w4"}),
        ("mother_first_name", {"name": "Maria"}, "first_name", {"name": "Alice"}),
        ("legal_name", {"value": "Alice Martin"}, "stage_name", {"name": "Ali M"}),
        ("birthday", {"date": "04-12"}, "age", {"years": 34}),
        (
            "date_of_death_of_father",
            {"date": "2019-01-08"},
            "date_of_birth",
            {"value": "1990-04-12"},
        ),
    ),
}


def _build(rows_by_group: dict[str, tuple[_Row, ...]], same: bool) -> tuple[AttributePair, ...]:
    out: list[AttributePair] = []
    for group, rows in rows_by_group.items():
        for row in rows:
            left, left_value, right, right_value, *rest = row
            out.append(
                AttributePair(
                    left_predicate=left,
                    left_value=left_value,
                    right_predicate=right,
                    right_value=right_value,
                    group=group,
                    same=same,
                    has_reinforcement=rest == [_R],
                )
            )
    return tuple(out)


SAME_CONCEPT_PAIRS: Final = _build(_SAME_ROWS, same=True)
DIFFERENT_CONCEPT_PAIRS: Final = _build(_DIFFERENT_ROWS, same=False)


def _pick(pairs: tuple[AttributePair, ...], split: Split | None) -> tuple[AttributePair, ...]:
    if split is not None and split not in ("tune", "holdout"):
        raise ValueError(f"split must be 'tune', 'holdout' or None, not {split!r}")
    return tuple(p for p in pairs if split is None or p.split == split)


def same_pairs(split: Split | None = None) -> tuple[AttributePair, ...]:
    """Same-concept supersede pairs (right value differs), all or one split."""
    return _pick(SAME_CONCEPT_PAIRS, split)


def reinforcement_pairs(split: Split | None = None) -> tuple[AttributePair, ...]:
    """Reinforcement variants (right value equals left) of the flagged same-concept pairs."""
    return tuple(p.reinforcement() for p in _pick(SAME_CONCEPT_PAIRS, split) if p.has_reinforcement)


def different_pairs(split: Split | None = None) -> tuple[AttributePair, ...]:
    """Different-concept pairs, all or one split."""
    return _pick(DIFFERENT_CONCEPT_PAIRS, split)
