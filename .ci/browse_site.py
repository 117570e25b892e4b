"""Open the built documentation site in headless Chromium (selenium): the index and one API entry
render (their titles, the navigation, the API entry's signature), and the browser's console log
holds no error. Usage: python .ci/browse_site.py docs/_build/html"""
import pathlib
import shutil
import sys

from selenium import webdriver
from selenium.webdriver.common.by import By


def browser():
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    return webdriver.Chrome(options=options, service=service)


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def main(site):
    site = pathlib.Path(site).resolve()
    driver = browser()
    failures = []
    try:
        driver.get((site / "index.html").as_uri())
        if "lucid" not in driver.title:
            failures.append(f"index: title {driver.title!r}")
        links = [a.text for a in driver.find_elements(By.CSS_SELECTOR, ".bd-main a")]
        if not any("Writing custom Functions" in t for t in links):
            failures.append(f"index: no link to the guides among {links[:10]}")
        failures += [f"index: console: {e['message']}" for e in console_errors(driver)]

        driver.get((site / "api.html").as_uri() + "#lucid.autograd.grad")
        entry = driver.find_element(By.ID, "lucid.autograd.grad")
        if "grad(" not in entry.text or not entry.is_displayed():
            failures.append(f"api: the entry of lucid.autograd.grad shows {entry.text!r}")
        failures += [f"api: console: {e['message']}" for e in console_errors(driver)]
    finally:
        driver.quit()
    if failures:
        sys.exit("the site does not render as it should:\n  " + "\n  ".join(failures))
    print(f"{site}: the index and the API page render in headless Chromium, no console errors")


if __name__ == "__main__":
    main(sys.argv[1])
