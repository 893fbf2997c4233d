"""The vocabulary of attribute names: phrases, spellings, abbreviations, synonyms, filler, units
and qualifiers, as LLMs vary them when they name one attribute of a person.

Invariants: every entry is lower case and made of predicate words (``[a-z0-9]``); ``PHRASES``
rewrite whole underscore-delimited word runs, ``WORDS`` one word into the canonical words it
stands for (possibly none); ``QUALIFIERS`` change which attribute a predicate names (numbers
such as 5k/10k are told apart by their digits), ``DEFAULT_QUALIFIERS`` only restate the
present (``current_employer`` is ``employer``); ``FILLER`` words name nothing of their own;
``UNITS`` are set aside only when they end a predicate. The lists are general English, not
the calibration pairs: a rule earns its place by being true of attribute names in general.
"""

from __future__ import annotations


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _map(text: str) -> dict[str, tuple[str, ...]]:
    """``"a=b c; d=e"`` -> {"a": ("b", "c"), "d": ("e",)}; an empty right side drops the word."""
    out: dict[str, tuple[str, ...]] = {}
    for item in text.split(";"):
        left, _, right = item.strip().partition("=")
        if left:
            out[left.strip()] = tuple(right.split())
    return out


# Multi-word runs first (matched on whole words of the predicate).
PHRASES: dict[str, tuple[str, ...]] = _map(
    """number_of=count; num_of=count; no_of=count; nr_of=count; count_of=count;
    amount_of=count; how_many=count; e_mail=email; date_of_birth=birth date;
    place_of_birth=birth place; year_of_birth=birth year; mother_tongue=native language;
    first_language=native language; zip_code=postal code; post_code=postal code;
    postcode=postal code; cell_phone=mobile phone; body_mass_index=bmi;
    myers_briggs=mbti; personal_best=pb; personal_record=pb; family_name=last name;
    given_name=first name; christian_name=first name; full_name=name; years_old=age;
    age_in_years=age; per_day=daily; per_week=weekly; per_month=monthly;
    per_year=annual; a_day=daily; a_week=weekly; a_month=monthly; a_year=annual;
    each_day=daily; each_week=weekly; each_month=monthly; each_year=annual;
    works_at=employer; work_at=employer; employed_by=employer; company_worked_for=employer;
    lives_in=residence; living_in=residence; place_of_residence=residence;
    phone_no=phone number; mobile_no=mobile number; id_number=id; id_no=id;
    wi_fi=wifi; e_bike=ebike; t_shirt=tshirt; x_ray=xray"""
)
# One word: spelling variants, abbreviations and plain synonyms.
WORDS: dict[str, tuple[str, ...]] = _map(
    """favourite=favorite; fav=favorite; fave=favorite; preferred=favorite;
    prefered=favorite; colour=color; behaviour=behavior; centre=center; metre=meter;
    organisation=organization; org=organization; licence=license; programme=program;
    neighbour=neighbor; neighbourhood=neighborhood; travelling=traveling; traveller=traveler;
    jewellery=jewelry; grey=gray; mum=mother; mom=mother; mommy=mother; dad=father;
    daddy=father; num=number; no=number; nr=number; cnt=count; qty=quantity;
    dob=birth date; bday=birth date; birthday=birth date; birthdate=birth date;
    birthplace=birth place; hometown=home town; tz=timezone; addr=address; tel=phone;
    telephone=phone; cellphone=mobile phone; cell=mobile; smartphone=phone; pref=favorite;
    dept=department; yr=year; yrs=year; mo=month; mth=month; temp=temperature;
    maximum=max; minimum=min; avg=average; pct=percent; percentage=percent; amt=amount;
    info=information; lang=language; loc=location; ht=height; wt=weight; mail=email;
    dt=date; bf=boyfriend; gf=girlfriend; firstname=first name; lastname=last name;
    surname=last name; username=handle; login=handle; workplace=employer;
    company=employer; spouse=partner; boss=manager; office=work; yearly=annual;
    annually=annual; upcoming=next; kid=child; kids=child; auto=car; automobile=car;
    vehicle=car; motorbike=motorcycle; bicycle=bike; cycle=bike; pb=pb; pr=pb;
    physician=doctor; gp=doctor; writer=author; job=occupation; profession=occupation;
    vocation=occupation; insurer=insurance provider; pic=photo; picture=photo;
    ig=instagram; fb=facebook; yt=youtube; os=operating system; pw=password;
    pwd=password; acct=account; ssn=social security number; uni=university;
    college=university; hs=high school; approx=approximate; dl=driver license;
    drivers=driver; driving=driver; learnt=learned; preference=favorite; prefs=favorite;
    owned=count; main=primary; mailing=postal; residency=residence; kb=keyboard;
    id=number; allergic=allergy; smoker=smoking; brand=make; marque=make"""
)
# Words that carry no attribute of their own ("my_city" is "city").
FILLER = _set(
    """a an the my our your his her their of for in on at to with by from is are be
    do does has have having user users subject person persons value values
    info information data detail details actual s per list set"""
)
# Unit words, set aside when they end a predicate ("height_cm" is "height").
UNITS = _set(
    """cm mm km kms mi mile miles meter meters ft feet foot inch inches kg kgs lb lbs
    pound pounds g gram grams usd eur gbp jpy chf dollar dollars euro euros celsius
    fahrenheit iso utc bpm mph kph kmh watt watts w ml l liter liters litre litres oz"""
)
# Words that change which attribute is meant: two predicates that differ by one of these
# are neighbours, never the same attribute automatically.
QUALIFIERS = _set(
    """home work school business private mobile landline first last middle maiden nick
    start end begin beginning finish min max high low lowest highest former past
    previous prior ex old new future next planned target goal desired wish ideal dream
    primary secondary main backup alternate alternative daily weekly monthly annual
    morning evening night weekday weekend left right upper lower mother father brother
    sister son daughter wife husband partner child parent grandmother grandfather
    manager friend birth death wedding anniversary native second third learning spoken
    least worst best dislike disliked hated liked resting average total
    remaining gross net before after departure arrival origin destination sender
    recipient buy sell half quarter full part junior senior adult baby teen summer
    winter spring autumn fall north south east west inner outer front back top bottom
    hourly pre post eldest youngest oldest older younger elder big little step out
    maternal paternal systolic diastolic inbound outbound incoming outgoing upstairs
    downstairs"""
)
# Words naming a person other than the speaker: a value keyed by one of them
# (``sister_city``, ``mom_job``) is that person's, not the speaker's attribute
# (``processors.value_now.askable``).
PEOPLE = _set(
    """mother father mom mum mam dad mama papa parent brother sister sibling son daughter
    child children kid baby wife husband spouse partner boyfriend girlfriend fiance fiancee
    grandmother grandfather grandma grandpa granny grandparent grandson granddaughter
    grandchild aunt uncle cousin niece nephew friend roommate flatmate housemate
    colleague coworker boss manager neighbour neighbor landlord tenant stepmother
    stepfather stepson stepdaughter"""
)
# Qualifiers that restate the default a memory holds (the present): on one side only, they
# do not make a different attribute.
DEFAULT_QUALIFIERS = _set(
    "current present usual regular typical normal default actual now favorite local"
)
IRREGULAR: dict[str, str] = {
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "data": "data",
    "series": "series",
    "species": "species",
}
# Words ending in "s" that are not plurals.
KEEP_S = _set(
    """status address glasses news physics mathematics diabetes class business boss bus
    gas alias canvas lens series species yes this is was has its plus always tennis
    chess fitness access process campus virus bonus iris atlas analysis basis thesis
    diagnosis religious various previous serious famous nervous jeans pants trousers
    shorts scissors headphones earphones sports athletics economics politics ethics
    mumps measles rabies wifi ios macos windows"""
)
