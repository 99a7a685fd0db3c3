"""Each dialogue domain's tools, written by gfcr as Python functions over the domain's database."""

from gfcr.envs.dialogue.tools.airline import AirlineTools
from gfcr.envs.dialogue.tools.common import Toolkit
from gfcr.envs.dialogue.tools.retail import RetailTools

__all__ = ["AirlineTools", "RetailTools", "Toolkit"]
