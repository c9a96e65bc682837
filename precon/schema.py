"""What the listing index knows about each attribute: how it is stored, filtered and faceted.

An attribute named here gets an indexed SQL path (a typed column, or rows of the term and number tables for
arrays and nested ``floorPlans.*`` paths). Any other attribute path still filters correctly, through the
reference evaluator in :mod:`precon.filters` run over the stored document, only slower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["text", "number", "bool"]


@dataclass(frozen=True)
class IndexedAttribute:
    path: str
    kind: Kind
    multi: bool = False
    facet_by_default: bool = False
    """Part of ``facets=*``."""

    @property
    def column(self) -> str:
        """The listings-table column of a single-valued attribute (its name is a fixed identifier)."""
        return "c_" + self.path


def _scalars(kind: Kind, names: str, facet: bool = False) -> list[IndexedAttribute]:
    return [IndexedAttribute(name, kind, False, facet) for name in names.split()]


def _multis(kind: Kind, names: str, facet: bool = False) -> list[IndexedAttribute]:
    return [IndexedAttribute(name, kind, True, facet) for name in names.split()]


LISTING_ATTRIBUTES: dict[str, IndexedAttribute] = {
    attribute.path: attribute
    for attribute in [
        *_scalars("text", "sellingStatus constructionStatus mode country state region cityOrDistrict", True),
        *_scalars(
            "text",
            "listingId path name streetName postalCode completionDate estimatedCompletionDate "
            "firstOccupancyDate constructionStarted salesStarted developmentLevies metering ceilingHeights",
        ),
        *_scalars(
            "number",
            "completionYear estimatedCompletionYear firstOccupancyYear constructionStartedYear salesStartedYear",
            True,
        ),
        *_scalars(
            "number",
            "streetNumber lat long startPrice endPrice averagePricePerSqFeet endPricePerSqFeet assignmentFee "
            "ccOrMaintFee parkingCost parkingMaintainance storageCost lockerMaintainance minBeds maxBeds "
            "minBaths maxBaths minSize maxSize numberOfUnits numberOfFloors numberOfFloorPlans "
            "numberOfIncentives sellingStatusUpdateTimestamp",
        ),
        *_scalars("bool", "isFeatured contactForPricing hasParking hasLocker", True),
        *_scalars(
            "bool",
            "completionDateTBD estimatedCompletionDateTBD firstOccupancyDateTBD constructionStartedTBD "
            "salesStartedTBD assignmentFeeFree ccOrMaintFeeIncluded developmentLeviesIncluded "
            "parkingCostIncluded parkingMaintainanceIncluded storageCostIncluded lockerMaintainanceIncluded "
            "meteringIncluded",
        ),
        *_multis(
            "text",
            "type neighbourhood municipalities exposures amenities architects builders interiorDesigners "
            "marketingCompanies salesCentres salesCompanies owners",
            True,
        ),
        *_multis(
            "text",
            "floorPlans.floorPlanType floorPlans.status floorPlans.exposure floorPlans.planCategory "
            "floorPlans.units.status",
        ),
        *_multis("bool", "floorPlans.contactForPricing"),
        *_multis(
            "number",
            "floorPlans.startPrice floorPlans.squareFeet floorPlans.numberOfBedrooms floorPlans.numberOfBathrooms "
            "paymentStructures.totalDeposit",
        ),
    ]
}

ATTRIBUTE_ALIASES: dict[str, str] = {"marketers": "marketingCompanies"}
"""Names the interface uses in parameter descriptions for attributes stored under another name."""

SCALAR_ATTRIBUTES = [a for a in LISTING_ATTRIBUTES.values() if not a.multi]
MULTI_ATTRIBUTES = [a for a in LISTING_ATTRIBUTES.values() if a.multi]
DEFAULT_FACETS = [a.path for a in LISTING_ATTRIBUTES.values() if a.facet_by_default]

LISTING_FIELDS: tuple[str, ...] = tuple(
    [
        "listingId",
        "objectID",
        "path",
        "name",
        "summary",
        "mode",
        "sellingStatus",
        "sellingStatusUpdateTimestamp",
        "constructionStatus",
        "type",
        "isFeatured",
        "createdAt",
        "updatedAt",
        "country",
        "state",
        "region",
        "cityOrDistrict",
        "streetName",
        "streetNumber",
        "postalCode",
        "neighbourhood",
        "municipalities",
        "fullAddress",
        "geographicAddress",
        "lat",
        "long",
        "_geoloc",
        "completionDate",
        "estimatedCompletionDate",
        "firstOccupancyDate",
        "constructionStarted",
        "salesStarted",
        "completionDateTBD",
        "estimatedCompletionDateTBD",
        "firstOccupancyDateTBD",
        "constructionStartedTBD",
        "salesStartedTBD",
        "completionYear",
        "estimatedCompletionYear",
        "firstOccupancyYear",
        "constructionStartedYear",
        "salesStartedYear",
        "startPrice",
        "endPrice",
        "averagePricePerSqFeet",
        "endPricePerSqFeet",
        "contactForPricing",
        "assignmentFee",
        "assignmentFeeFree",
        "ccOrMaintFee",
        "ccOrMaintFeeIncluded",
        "developmentLevies",
        "developmentLeviesIncluded",
        "parkingCost",
        "parkingMaintainance",
        "storageCost",
        "lockerMaintainance",
        "parkingCostIncluded",
        "parkingMaintainanceIncluded",
        "storageCostIncluded",
        "lockerMaintainanceIncluded",
        "parkingRestriction",
        "storageRestriction",
        "hasParking",
        "hasLocker",
        "metering",
        "meteringIncluded",
        "minBeds",
        "maxBeds",
        "minBaths",
        "maxBaths",
        "minSize",
        "maxSize",
        "numberOfUnits",
        "numberOfFloors",
        "numberOfFloorPlans",
        "numberOfIncentives",
        "ceilingHeights",
        "finishes",
        "virtualShowing",
        "exposures",
        "amenities",
        "incentives",
        "brokerages",
        "videos",
        "logo",
        "coverPhoto",
        "photos",
        "paymentStructures",
        "architects",
        "builders",
        "interiorDesigners",
        "marketingCompanies",
        "salesCentres",
        "salesCompanies",
        "owners",
        "floorPlans",
    ]
)
"""Every attribute of a listing in the interface, in its order."""

FLOOR_PLAN_RECORD_FIELDS: tuple[str, ...] = (
    "id", "name", "planCategory", "floorPlanType", "squareFeet", "startPrice", "contactForPricing", "status",
    "numberOfBedrooms", "numberOfBathrooms", "exposure", "image", "createdAt", "lastUpdated", "units",
)  # fmt: skip
"""Every field of a floor plan in the API (docs/api.md)."""
UNIT_RECORD_FIELDS: tuple[str, ...] = ("unitNumber", "floor", "status", "price", "description")
"""Every field of a unit of a floor plan (contract.md, "Units of a floor plan")."""

LITE_LEFT_OUT: frozenset[str] = frozenset(
    [
        "summary",
        "assignmentFee",
        "assignmentFeeFree",
        "ccOrMaintFee",
        "ccOrMaintFeeIncluded",
        "developmentLevies",
        "developmentLeviesIncluded",
        "parkingCost",
        "parkingMaintainance",
        "storageCost",
        "lockerMaintainance",
        "parkingCostIncluded",
        "parkingMaintainanceIncluded",
        "storageCostIncluded",
        "lockerMaintainanceIncluded",
        "parkingRestriction",
        "storageRestriction",
        "hasParking",
        "hasLocker",
        "metering",
        "meteringIncluded",
        "numberOfUnits",
        "numberOfFloors",
        "numberOfFloorPlans",
        "numberOfIncentives",
        "ceilingHeights",
        "finishes",
        "virtualShowing",
        "exposures",
        "amenities",
        "incentives",
        "brokerages",
        "videos",
        "logo",
        "photos",
        "paymentStructures",
        "floorPlans",
    ]
)
"""What ``v1-lite`` leaves out: the text, fees and their terms, building details, media and the nested records."""
LITE_FIELDS: frozenset[str] = frozenset(LISTING_FIELDS) - LITE_LEFT_OUT
"""What ``v1-lite`` keeps of a listing: identity, location, statuses, type, prices, beds, baths, sizes, dates,
the cover photo and the references."""

SEARCHABLE_LISTING_FIELDS: tuple[str, ...] = (
    "name",
    "summary",
    "amenities",
    "cityOrDistrict",
    "streetName",
    "country",
    "neighbourhood",
    "fullAddress",
)
SEARCHABLE_LISTING_WEIGHTS: tuple[float, ...] = (10.0, 1.0, 2.0, 5.0, 3.0, 0.5, 5.0, 2.0)
"""bm25 weight per searchable field: a word in the name counts most."""

SEARCHABLE_PROFILE_FIELDS: tuple[str, ...] = ("name", "summary", "address", "website", "email")
SEARCHABLE_PROFILE_WEIGHTS: tuple[float, ...] = (10.0, 1.0, 2.0, 2.0, 1.0)

LISTING_REFERENCE_FIELDS: dict[str, str] = {
    "architects": "architects",
    "builders": "builders",
    "interiorDesigners": "interiorDesigners",
    "marketingCompanies": "marketingCompanies",
    "marketers": "marketingCompanies",
    "salesCentres": "salesCentres",
    "salesCompanies": "salesCompanies",
    "owners": "owners",
}
"""Names accepted by ``referrences`` on listings, and the field each expands."""

PROFILES_OF_LISTING_FIELDS: tuple[str, ...] = (
    "owners",
    "builders",
    "marketingCompanies",
    "salesCompanies",
    "architects",
    "interiorDesigners",
)

HISTORY_FIELDS: frozenset[str] = frozenset([*LISTING_FIELDS, *FLOOR_PLAN_RECORD_FIELDS, *UNIT_RECORD_FIELDS])
"""The field names a history entry may carry: a listing's, a floor plan's or a unit's."""
